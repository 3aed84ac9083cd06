"""albert_tf's benchmarks, grouped by the question each answers; run each as `python -m benchmarks.FAMILY.NAME`.

  speed       how fast: the training step, the step's overhead, serving latency and warm-up, data
              creation, the dynamic input pipeline, XLA:CPU matmuls (against KerasHub, Hugging Face
              and the original data script, in the same run)
  learning    does it learn: held-out MLM and SOP during pretraining, recipes, the paper's
              experiments at small scale, Hugging Face trained the same way
  downstream  does pretraining help: GLUE, SQuAD and transfer from a pretrained checkpoint, and
              KerasHub reading albert_tf's Hugging Face export

`common` holds what they share; `run_all` reruns them and writes benchmarks/README.md. They use
albert_tf's public API and the library modules BUILD.md documents, never its tools as libraries
(tests/test_layering.py), and run tools as commands.
"""
