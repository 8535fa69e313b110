"""pysynth.models.postprocess.context_case: a paragraph's case and spacing on a lower-cased output."""
from pysynth.models.postprocess import context_case

CTX = ("The University of Chicago's College has 5,000 students. Jacksonville's co-ed fraternity (est. 1925) is "
       "Alpha Phi Omega. In 1903 the city grew; the U.N. Charter names it.")


def test_words_take_their_case_inside_sentences():
    assert context_case("how many students are in the university of chicago ' s college?", CTX) == \
        "How many students are in the University of Chicago's College?"
    # "The" and "In" start sentences only: "the" and "in" stay lower-case
    assert context_case("in what year did the city grow?", CTX) == "In what year did the city grow?"
    assert context_case("what grew in 1903?", CTX) == "What grew in 1903?"
    # seen only at a sentence's start: no evidence it is a name
    assert context_case("what is jacksonville ' s co - ed fraternity?", CTX) == "What is jacksonville's co-ed fraternity?"
    # a glued "." ends no sentence ("N" of "U.N." is inside one); after "U.N. " a sentence may start, as after
    # any full stop, so "Charter" there is no evidence
    assert context_case("what does the u. n. charter name?", CTX) == "What does the U.N. charter name?"


def test_only_tokens_glued_in_the_context_are_glued():
    assert context_case("how many students, 5, 000?", CTX) == "How many students, 5,000?"
    assert context_case("what is ( est . )?", CTX) == "What is (est. )?"  # ". )" is not glued in the context
    assert context_case("what is a - b?", CTX) == "What is a - b?"


def test_edge_cases():
    assert context_case("", CTX) == ""
    assert context_case("what?", "") == "What?"
    assert context_case("  what  is it?", CTX) == "  what  is it?"  # leading space: nothing to capitalise
