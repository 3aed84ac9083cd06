"""Does pretraining help: fine-tuning from a pretrained checkpoint against random init, and interop."""
