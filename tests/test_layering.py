"""The package reads top-down: every albert_tf import points down the layers (lazy imports inside functions too).

    tools (albert_tf/<tool>.py: run_*, export, convert, ...)
      -> training (the loops and the fine-tuning front end)
      -> tasks (readers, heads, losses, metrics)
      -> checkpoints -> models / export_lib -> networks / data -> layers / text / optimization
      -> base (albert_config, file_utils, progress, cli)

A module may import its own package and anything in a lower layer, never a higher one.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "albert_tf"
BASE_MODULES = ("albert_config", "file_utils", "progress", "cli")
RANKS = {"base": 0, "layers": 1, "text": 1, "optimization": 1, "networks": 2, "data": 2, "models": 3,
         "export_lib": 3, "checkpoints": 4, "tasks": 5, "training": 6, "tools": 7, "package": 8}


def group(module):
    """The layer of a dotted albert_tf module name."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1] in BASE_MODULES:
        return "base"
    return parts[1] if (PACKAGE / parts[1]).is_dir() else "tools"


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def albert_tf_imports(source_text):
    """Dotted names of the albert_tf modules a module's source imports, anywhere in it."""
    for node in ast.walk(ast.parse(source_text)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("albert_tf"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("albert_tf"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                is_module = (PACKAGE.parent / candidate.replace(".", "/")).with_suffix(".py").exists() or (
                    PACKAGE.parent / candidate.replace(".", "/")).is_dir()
                yield candidate if is_module else node.module


def test_every_import_points_down_the_layers():
    upward = []
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50
    for path in modules:
        source = module_name(path)
        for target in albert_tf_imports(path.read_text(encoding="utf-8")):
            if group(target) != group(source) and RANKS[group(target)] >= RANKS[group(source)]:
                upward.append(f"{source} ({group(source)}) imports {target} ({group(target)})")
    assert not upward, "imports that point up or sideways:\n" + "\n".join(upward)


def test_the_layer_check_sees_lazy_imports_and_names_modules_and_packages():
    source = ("from albert_tf.models import registry\nfrom albert_tf import cli\n"
              "def f():\n    from albert_tf.training.finetuning import finetune\n")
    assert list(albert_tf_imports(source)) == ["albert_tf.models.registry", "albert_tf.cli",
                                               "albert_tf.training.finetuning"]
    assert [group(m) for m in ("albert_tf.cli", "albert_tf.run_squad", "albert_tf.tasks.glue", "albert_tf")] == [
        "base", "tools", "tasks", "package"]
    assert RANKS[group("albert_tf.training.finetuning")] > RANKS[group("albert_tf.layers.activations")]
