"""Export of the seq2seq models (ONNX: ``pysynth.export.onnx``). Importing this does not import torch."""
