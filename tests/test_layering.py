"""The package reads top-down: every albert_tf import points down the layers (lazy imports inside functions too).

    tools (albert_tf/<tool>.py: run_*, export, convert, ...: flags and a call into the library)
      -> training (the loops and the fine-tuning front end)
      -> tasks (readers, heads, losses, metrics)
      -> checkpoints (formats, conversion) / export_lib (SavedModels, export)
      -> models -> networks / data -> layers / text / optimization
      -> base (albert_config, file_utils, progress, cli, settings)

A module may import its own package and anything in a lower layer, never a higher one.
Tools are leaves: no module imports a tool, neither another tool nor the Beam pipeline
(pipelines/) nor a benchmark (benchmarks/); they run tools as commands.
"""

import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "albert_tf"
BASE_MODULES = ("albert_config", "file_utils", "progress", "cli", "settings")
RANKS = {"base": 0, "layers": 1, "text": 1, "optimization": 1, "networks": 2, "data": 2, "models": 3,
         "export_lib": 4, "checkpoints": 4, "tasks": 5, "training": 6, "tools": 7, "package": 8}
# Code outside the package that uses it: the Beam pipeline and the benchmarks.
USERS = [PACKAGE.parent / "pipelines", PACKAGE.parent / "benchmarks"]


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
    def ours(name):  # albert_tf itself, not a package named like it (albert_tf_pipelines)
        return name == "albert_tf" or name.startswith("albert_tf.")

    for node in ast.walk(ast.parse(source_text)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if ours(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.module and ours(node.module):
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


def import_cycles(graph):
    """Each cycle of `graph` ({module: modules it imports}) once, as its modules in import order, the first
    repeated at the end; a module importing itself is no cycle."""
    cycles, done, path, on_path = set(), set(), [], {}

    def visit(module):
        on_path[module] = len(path)
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if target == module or target not in graph:
                continue
            if target in on_path:
                cycle = path[on_path[target]:]
                start = cycle.index(min(cycle))  # one rotation, so each cycle is reported once
                cycles.add(tuple(cycle[start:] + cycle[:start]))
            elif target not in done:
                visit(target)
        path.pop()
        del on_path[module]
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module)
    return [[*cycle, cycle[0]] for cycle in sorted(cycles)]


def test_no_import_cycles():
    """No albert_tf module imports, through any chain of imports (lazy ones inside functions too), a module
    that imports it back: an import inside a function hides a circle from Python, not from the reader."""
    graph = {module_name(path): set(albert_tf_imports(path.read_text(encoding="utf-8")))
             for path in sorted(PACKAGE.rglob("*.py"))}
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_cycle_check_finds_a_circle_through_several_modules():
    graph = {"a": {"b", "a"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d", "outside"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"]]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_tools_are_leaves():
    """No tool module is imported by anything: not by another tool, the package, pipelines/ or benchmarks/."""
    tool_imports = []
    sources = sorted(PACKAGE.rglob("*.py")) + [path for folder in USERS for path in sorted(folder.rglob("*.py"))]
    assert len([path for path in sources if PACKAGE not in path.parents]) >= 10, "pipelines/ and benchmarks/ read"
    for path in sources:
        for target in albert_tf_imports(path.read_text(encoding="utf-8")):
            if group(target) == "tools":
                tool_imports.append(f"{path.relative_to(PACKAGE.parent)} imports {target}")
    assert not tool_imports, "tools imported as libraries:\n" + "\n".join(tool_imports)


def test_the_leaf_check_sees_a_tool_imported_lazily():
    source = "def f():\n    from albert_tf.export import export\n    from albert_tf.export_lib import exporter\n"
    assert [group(module) for module in albert_tf_imports(source)] == ["tools", "export_lib"]


def test_serving_behaviour_sits_with_each_model_kind():
    """export_lib picks a serving class per model kind once (serving_module.SERVING_BY_KIND); no code
    compares a kind with a name to choose behaviour."""
    switches = []
    for path in sorted((PACKAGE / "export_lib").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                constants = {n.value for n in [node.left, *node.comparators] if isinstance(n, ast.Constant)}
                if constants & {"encoder", "pretrainer", "classifier", "span_labeler", "squad_v2_span_labeler",
                                 "token_classifier"}:
                    switches.append(f"{path.name}:{node.lineno}")
    assert not switches, "behaviour chosen by comparing the model kind: " + ", ".join(switches)
    from albert_tf.export_lib.serving_module import SERVED_KINDS, SERVING_BY_KIND, ServingModule

    assert set(SERVED_KINDS) == {"encoder", "pretrainer", "classifier", "span_labeler", "squad_v2_span_labeler",
                                 "token_classifier"}
    assert all(issubclass(serving, ServingModule) for serving in SERVING_BY_KIND.values())


def test_benchmarks_use_albert_tf_through_documented_modules():
    """A benchmark imports albert_tf itself or a library module that BUILD.md's code layout names, so a
    refactor that moves a module knows what outside code relies on."""
    build = (PACKAGE.parent / "BUILD.md").read_text(encoding="utf-8")
    layout = build[build.index("## Code layout"):]
    undocumented = set()
    for path in sorted((PACKAGE.parent / "benchmarks").rglob("*.py")):
        for target in albert_tf_imports(path.read_text(encoding="utf-8")):
            name = target.split(".")[-1]
            if target != "albert_tf" and group(target) != "base" and f"`{name}`" not in layout:
                undocumented.add(f"{path.relative_to(PACKAGE.parent)}: {target}")
    assert not undocumented, "benchmarks import modules BUILD.md does not document:\n" + "\n".join(sorted(undocumented))


# A command-line flag as a message writes it.
_FLAG = re.compile(r"(?<![\w-])--[a-z]\w*")


def command_names():
    """How a message names a tool's command: albert_tf.<tool>, its console script, or a tool's compound name."""
    stems = [path.stem for path in PACKAGE.glob("*.py") if group(module_name(path)) == "tools"]
    scripts = re.findall(r"^(albert-[\w-]+) =", (PACKAGE.parent / "pyproject.toml").read_text(), re.MULTILINE)
    return [f"albert_tf.{stem}" for stem in stems] + scripts + [stem for stem in stems if "_" in stem]


def flags_in_raised_messages(source_text, commands):
    """(line, flag) for each `--flag` the message of a raise statement says, unless the message quotes a
    command line (names one of `commands`): a library says `<name>` (albert_tf.settings.SettingError)."""
    found = []
    for node in ast.walk(ast.parse(source_text)):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        pieces, parts_of_f_strings = [], set()
        for sub in ast.walk(node.exc):
            if isinstance(sub, ast.JoinedStr):  # an f-string: its text with each value as "x"
                pieces.append("".join(part.value if isinstance(part, ast.Constant) else "x" for part in sub.values))
                parts_of_f_strings.update(id(part) for part in sub.values)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in parts_of_f_strings:
                pieces.append(sub.value)
        message = " ".join(pieces)
        if not any(command in message for command in commands):
            found.extend((node.lineno, flag) for flag in _FLAG.findall(message))
    return found


def test_library_errors_name_settings_and_leave_flags_to_the_tools():
    """Below the tools, an error names a setting as `<name>` (SettingError): a Python caller reads `name`, a
    tool's user `--name` (albert_tf.cli.run). A message may quote another command's flags when it names it."""
    commands = command_names()
    assert {"albert_tf.convert", "albert-convert", "create_pretraining_data"} <= set(commands)
    flag_speaking = [f"{path.relative_to(PACKAGE)}:{line} {flag}" for path in sorted(PACKAGE.rglob("*.py"))
                     if group(module_name(path)) not in ("tools", "package")
                     for line, flag in flags_in_raised_messages(path.read_text(encoding="utf-8"), commands)]
    assert not flag_speaking, "library errors that speak flags:\n" + "\n".join(flag_speaking)


def test_the_flag_check_reads_f_strings_and_allows_quoted_commands():
    source = ("def f(name):\n"
              "    raise ValueError(f'bad --{name}')\n"
              "def g():\n"
              "    raise ValueError('rerun create_pretraining_data --overwrite')\n"
              "def h():\n"
              "    raise SettingError('pass <overwrite>, not ' '--force')\n"
              "def k(path):\n"
              "    raise OSError(f'{path} exists: pass --overwrite')\n")
    assert sorted(flags_in_raised_messages(source, ["create_pretraining_data"])) == [
        (2, "--x"), (6, "--force"), (8, "--overwrite")]
