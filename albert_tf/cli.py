"""What every `python -m albert_tf.<tool>` shares: quiet TF logs, one-line errors."""

import contextlib
import os
import re
import sys

from absl import app, flags, logging

from albert_tf.settings import SettingError

# Errors that describe bad input or environment, reported in one line. Anything
# else is a bug and keeps its traceback.
# OSError covers what the environment does to a run: a read-only or full file system
# (EROFS, ENOSPC, EFBIG), missing permissions, a worker process that died.
USER_ERRORS = (OSError, ValueError, ImportError)
# Exit status 1 for those. An error class with an `exit_code` of its own is reported the same way with
# that status (a training run stopped by its divergence check: 2), so that a script can tell them apart.
# Ctrl-C: 128 + SIGINT, as a shell reports a process that SIGINT stopped.
INTERRUPTED_EXIT_CODE = 130


def import_tensorflow_quietly():
    """Imports TensorFlow with its C++ start-up chatter silenced (`quiet_native_logs`).

    On a machine without a GPU, TF prints CUDA-probe lines to fd 2 before its
    log level applies. Set TF_CPP_MIN_LOG_LEVEL=0 to see them (and all C++ logs).
    """
    if any(arg.split("=")[0] in _HELP_FLAGS for arg in sys.argv[1:]):
        return  # a help asked for needs no TensorFlow (seconds of imports): the flags are defined without it
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with quiet_native_logs():
        import tensorflow  # noqa: F401


@contextlib.contextmanager
def quiet_native_logs():
    """Sends what native code writes to stderr (fd 2) meanwhile to /dev/null, unless TF_CPP_MIN_LOG_LEVEL is unset or
    0 (every C++ log asked for). TensorFlow's start-up lines and tensorflow-text's SentencePiece model conversion
    log through copies of absl that no log level reaches yet ('All log messages before absl::InitializeLog() is
    called are written to STDERR'); the tools set the level to 3 (`import_tensorflow_quietly`)."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") == "0":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# Keras 3 re-raises an error from inside a layer's call() as a new one of the same class whose
# message starts with this, the original message in bold below it and the original as __context__.
_KERAS_WRAPPED = "Exception encountered when calling"
_ANSI_STYLE = re.compile(r"\x1b\[[0-9;]*m")
# absl's help flags exit with status 1; a help asked for is a success.
_HELP_FLAGS = ("-h", "-?", "--help", "--helpshort", "--helpfull", "--helpxml")


# What TensorFlow wraps around the reason of an op's error: the function it ran in, the graph's traceback
# header, the input pipeline's transformation, the op and node names.
_TF_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_TF_OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\](\s*name:.*)?$")
_TF_TRANSFORMATION = re.compile(r"^Error in user-defined function passed to \S+ transformation with iterator: \S+: ")
# The lines of a graph's error that are not its reason (an indented line is the graph's Python traceback).
_TF_NOT_THE_REASON = re.compile(r"^(\s|Graph execution error:|Detected at node |<stack traces unavailable>|\[\[)")


def tf_error_reason(error):
    """The line of a TensorFlow error (or its message) that says what went wrong: 'File too large', 'Key:
    input_ids.  Number of int64 values != expected...', without the wrappers ('Graph execution error:', the
    function node, [Op:SaveV2]) that name TensorFlow's machinery instead."""
    message = getattr(error, "message", None) or str(error)
    lines = [_TF_FUNCTION_NODE.sub("", line).rstrip() for line in message.strip().splitlines()]
    reasons = [line for line in lines if line and not _TF_NOT_THE_REASON.match(line)]
    line = reasons[0] if reasons else (lines[0] if lines else type(error).__name__)
    return _TF_TRANSFORMATION.sub("", _TF_OP_SUFFIX.sub("", line)).strip()


def error_line(error):
    """The one line a tool prints for `error`: the innermost meaningful message (through Keras's
    layer-call wrappers), without TF's op traceback or terminal styling."""
    message = getattr(error, "message", None) or str(error)  # TF errors: `message` is without the op's traceback
    while message.lstrip().startswith(_KERAS_WRAPPED):
        inner = error.__context__
        if isinstance(inner, BaseException) and str(inner).strip():
            error, message = inner, getattr(inner, "message", None) or str(inner)
            continue
        lines = [_ANSI_STYLE.sub("", line).strip() for line in message.strip().splitlines()[1:]]
        message = next((line for line in lines if line), message)
        break
    lines = _ANSI_STYLE.sub("", message).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _tensorflow_environment_errors():
    """TF's errors for what the environment did to a file (read-only, full, missing, damaged, unreachable)."""
    if "tensorflow" not in sys.modules:
        return ()
    errors = sys.modules["tensorflow"].errors
    return (errors.NotFoundError, errors.PermissionDeniedError, errors.AlreadyExistsError,
            errors.ResourceExhaustedError, errors.DataLossError, errors.UnavailableError)


def _show_tool_docstring_in_help(tool_module):
    """absl's `--help` starts with the docstring of `__main__`, which under a console script `albert-x`
    is its wrapper's (none): the tool module's description and example stand in."""
    main_module, tool = sys.modules["__main__"], sys.modules.get(tool_module)
    if not main_module.__doc__ and tool is not None and tool.__doc__:
        main_module.__doc__ = tool.__doc__.replace("%", "%%")  # absl fills %s with the program's name


def _show_tool_flags_in_short_help():
    """`--help` lists the key flags of the script being run, which absl takes to be those its own file
    defines: none under a console script's wrapper, and not those a tool takes from a shared module (the
    fine-tuning front end, the data flags). Every flag a module of this package defines is made a key flag
    of the script, so that `--help` is `--helpfull` without absl's and TensorFlow's own flags."""
    package = __name__.split(".")[0]
    for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
        if module.split(".")[0] == package:
            for flag in module_flags:
                flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def show_tool_in_help(tool_module):
    """Makes `--help` show the tool of `tool_module` (its name): its docstring and every flag it defines.
    `run` does this; a tool that runs absl itself (the Beam pipeline) calls it after defining its flags."""
    _show_tool_docstring_in_help(tool_module)
    _show_tool_flags_in_short_help()


def run(main, define_flags, uses_tensorflow=True, tool_module=None, check_flags=None):
    """Defines the tool's flags and runs `main(argv) -> exit code` under absl.

    `tool_module`: the name of the tool's module, whose docstring `--help` shows (default: the module
    of `main`). `check_flags(argv)`: the checks the flags alone decide, run before TensorFlow is
    imported, so that a refused command line answers at once (a TensorFlow import takes seconds).
    """
    define_flags()
    show_tool_in_help(tool_module or getattr(main, "__module__", "__main__"))
    main_spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = main_spec.name if main_spec else os.path.basename(sys.argv[0])

    def wrapped(argv):
        if not flags.FLAGS["verbosity"].present:
            logging.set_verbosity(logging.WARNING)
        try:
            if check_flags:
                check_flags(argv)
            if uses_tensorflow:
                import_tensorflow_quietly()
            return main(argv)
        except USER_ERRORS + _tensorflow_environment_errors() as error:
            if flags.FLAGS["verbosity"].value >= 1:
                raise
            if isinstance(error, SettingError):  # the library names a setting; a command line says its flag
                error = error.for_flags()
            print(f"{program}: error: {error_line(error)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            # Ctrl-C where no handler of the tool's own takes it (the training loops save first): one line, and
            # the status a shell gives a process Ctrl-C stopped; the `finally` blocks have removed any staging.
            if flags.FLAGS["verbosity"].value >= 1:
                raise
            print(f"{program}: interrupted (Ctrl-C)", file=sys.stderr)
            return INTERRUPTED_EXIT_CODE
        except Exception as error:  # re-raised unless its class states its exit status
            if getattr(type(error), "exit_code", None) is None or flags.FLAGS["verbosity"].value >= 1:
                raise
            print(f"{program}: error: {error_line(error)}", file=sys.stderr)
            return type(error).exit_code

    run_absl(wrapped)


def run_absl(main, **kwargs):
    """absl's app.run, where a help asked for exits with status 0 (absl's help flags exit with 1)."""
    try:
        app.run(main, **kwargs)
    except SystemExit as done:
        if done.code == 1 and any(argument.split("=", 1)[0] in _HELP_FLAGS for argument in sys.argv[1:]):
            sys.exit(0)
        raise
