# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython text intake (measured alternative to csrc/bindings/intake.cpp; built only by
bench/bench_intake.py).

``to_buffer(texts)`` turns a list of str into one UTF-8 buffer (numpy uint8) and int64
offsets (``n + 1``): text i is ``buffer[offsets[i]:offsets[i + 1]]``. It reads each str's
own storage (latin-1 / UCS-2 / UCS-4) and encodes straight into the buffer, so nothing is
allocated per item and no UTF-8 copy is cached inside the str objects (which
``PyUnicode_AsUTF8AndSize``, the C-API call behind intake.cpp, does for non-ASCII str).
``to_views(texts)`` is intake.cpp's algorithm in Cython (per-item
``PyUnicode_AsUTF8AndSize``), returning the total byte count.
"""
import numpy as np

cimport numpy as cnp
from cpython.object cimport PyObject
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

cnp.import_array()

cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        const char* tp_name
    PyObject* PySequence_Fast(object o, const char* m) except NULL
    Py_ssize_t PySequence_Fast_GET_SIZE(PyObject* o)
    PyObject** PySequence_Fast_ITEMS(PyObject* o)
    void Py_DECREF(PyObject* o)
    bint PyUnicode_Check(PyObject* o)
    bint PyUnicode_IS_ASCII(PyObject* o)
    int PyUnicode_KIND(PyObject* o)
    void* PyUnicode_DATA(PyObject* o)
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject* o)
    const char* PyUnicode_AsUTF8AndSize(PyObject* o, Py_ssize_t* size)
    void PyErr_Clear()
    PyTypeObject* Py_TYPE(PyObject* o)
    int PyUnicode_1BYTE_KIND, PyUnicode_2BYTE_KIND


cdef Py_ssize_t _utf8_len(PyObject* s, Py_ssize_t i, str name) except -1:
    """UTF-8 length of a non-ASCII str, from its storage; ValueError on a lone surrogate."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s), k, total = 0
    cdef int kind = PyUnicode_KIND(s)
    cdef const uint8_t* p1
    cdef const uint16_t* p2
    cdef const uint32_t* p4
    cdef uint32_t c
    if kind == PyUnicode_1BYTE_KIND:
        p1 = <const uint8_t*>PyUnicode_DATA(s)
        for k in range(n):
            total += 1 + (p1[k] >> 7)
        return total
    if kind == PyUnicode_2BYTE_KIND:
        p2 = <const uint16_t*>PyUnicode_DATA(s)
        for k in range(n):
            c = p2[k]
            if c < 0x80:
                total += 1
            elif c < 0x800:
                total += 2
            else:
                if 0xD800 <= c <= 0xDFFF:
                    raise ValueError(f"{name}[{i}] is not valid Unicode (lone surrogate); clean the text first")
                total += 3
        return total
    p4 = <const uint32_t*>PyUnicode_DATA(s)
    for k in range(n):
        c = p4[k]
        if c < 0x80:
            total += 1
        elif c < 0x800:
            total += 2
        elif c < 0x10000:
            if 0xD800 <= c <= 0xDFFF:
                raise ValueError(f"{name}[{i}] is not valid Unicode (lone surrogate); clean the text first")
            total += 3
        else:
            total += 4
    return total


cdef inline uint8_t* _put(uint8_t* o, uint32_t c) noexcept nogil:
    if c < 0x80:
        o[0] = <uint8_t>c
        return o + 1
    if c < 0x800:
        o[0] = <uint8_t>(0xC0 | (c >> 6))
        o[1] = <uint8_t>(0x80 | (c & 0x3F))
        return o + 2
    if c < 0x10000:
        o[0] = <uint8_t>(0xE0 | (c >> 12))
        o[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
        o[2] = <uint8_t>(0x80 | (c & 0x3F))
        return o + 3
    o[0] = <uint8_t>(0xF0 | (c >> 18))
    o[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
    o[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
    o[3] = <uint8_t>(0x80 | (c & 0x3F))
    return o + 4


cdef PyObject* _fast(object texts, str name) except NULL:
    if texts is None:
        raise TypeError(f"{name} must be a sequence of str, got None")
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, not a single string; wrap it in a list")
    try:
        return PySequence_Fast(texts, b"")
    except TypeError:
        raise TypeError(f"{name} must be a sequence of str, got {type(texts).__name__}") from None


def to_buffer(texts, str name="texts"):
    """list of str -> (uint8 UTF-8 buffer, int64 offsets of length n + 1)."""
    cdef PyObject* seq = _fast(texts, name)
    cdef Py_ssize_t n, i, k, m
    cdef PyObject** items
    cdef PyObject* s
    cdef cnp.ndarray[int64_t, ndim=1] offsets
    cdef int64_t* off
    cdef uint8_t* o
    cdef int kind
    cdef const uint8_t* p1
    cdef const uint16_t* p2
    cdef const uint32_t* p4
    try:
        n = PySequence_Fast_GET_SIZE(seq)
        items = PySequence_Fast_ITEMS(seq)
        offsets = np.empty(n + 1, dtype=np.int64)
        off = &offsets[0]
        off[0] = 0
        for i in range(n):  # pass 1: byte lengths, types checked
            s = items[i]
            if not PyUnicode_Check(s):
                raise TypeError(f"{name}[{i}] must be str, got {Py_TYPE(s).tp_name.decode()}")
            off[i + 1] = off[i] + (PyUnicode_GET_LENGTH(s) if PyUnicode_IS_ASCII(s) else _utf8_len(s, i, name))
        buf = np.empty(off[n], dtype=np.uint8)
        if off[n] == 0:
            return buf, offsets
        o = <uint8_t*>cnp.PyArray_DATA(buf)
        for i in range(n):  # pass 2: copy (ASCII) or encode
            s = items[i]
            m = PyUnicode_GET_LENGTH(s)
            if PyUnicode_IS_ASCII(s):
                memcpy(o, PyUnicode_DATA(s), m)
                o += m
                continue
            kind = PyUnicode_KIND(s)
            if kind == PyUnicode_1BYTE_KIND:
                p1 = <const uint8_t*>PyUnicode_DATA(s)
                for k in range(m):
                    o = _put(o, p1[k])
            elif kind == PyUnicode_2BYTE_KIND:
                p2 = <const uint16_t*>PyUnicode_DATA(s)
                for k in range(m):
                    o = _put(o, p2[k])
            else:
                p4 = <const uint32_t*>PyUnicode_DATA(s)
                for k in range(m):
                    o = _put(o, p4[k])
        return buf, offsets
    finally:
        Py_DECREF(seq)


def to_views(texts, str name="texts"):
    """intake.cpp's algorithm: a UTF-8 view of every str (PyUnicode_AsUTF8AndSize); returns
    the total number of bytes (the views themselves cannot leave C)."""
    cdef PyObject* seq = _fast(texts, name)
    cdef Py_ssize_t n, i, size
    cdef int64_t total = 0
    cdef PyObject** items
    cdef const char* p
    try:
        n = PySequence_Fast_GET_SIZE(seq)
        items = PySequence_Fast_ITEMS(seq)
        for i in range(n):
            if not PyUnicode_Check(items[i]):
                raise TypeError(f"{name}[{i}] must be str, got {Py_TYPE(items[i]).tp_name.decode()}")
            p = PyUnicode_AsUTF8AndSize(items[i], &size)
            if p == NULL:
                PyErr_Clear()
                raise ValueError(f"{name}[{i}] is not valid Unicode (lone surrogate); clean the text first")
            total += size
        return total
    finally:
        Py_DECREF(seq)
