"""PyTorch side: networks, KLENT self-play and training, export to ONNX."""
