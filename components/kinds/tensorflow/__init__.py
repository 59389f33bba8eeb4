"""TFJob: TensorFlow's distributed training, every process told its place through TF_CONFIG."""
