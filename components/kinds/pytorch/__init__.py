"""PyTorchJob: torch.distributed training, every process told its rank through its environment."""
