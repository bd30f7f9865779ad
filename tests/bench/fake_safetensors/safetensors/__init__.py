"""A stand-in for safetensors, for bench/train/torch_train.py's checkpoint path against the fake
torch (tests/bench/fake_torch): the real safetensors.torch needs the real torch."""
