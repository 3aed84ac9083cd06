"""Console scripts of the Beam pipelines, importable without Apache Beam so that a plain install of
albert_tf says in one line which extra a pipeline needs instead of printing an ImportError."""

import sys


def beam_create_pretraining_data():
    """The `albert-beam-create-pretraining-data` console script."""
    try:
        import apache_beam  # noqa: F401
    except ImportError:
        print("albert-beam-create-pretraining-data: error: needs Apache Beam, which the [beam] extra installs: "
              "pip install 'albert_tf[beam]'", file=sys.stderr)
        sys.exit(1)
    from albert_tf_pipelines.create_pretraining_data import console_main

    console_main()
