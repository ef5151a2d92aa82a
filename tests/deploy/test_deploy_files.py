"""The deployment files in deploy/ agree with the code they deploy.

Docker, Kubernetes and systemd do not run here, so the files are parsed and checked against
the real objects: every ``cow006 ...`` command line resolves to a command of the ``cow006``
Typer app with options it has (parsed by click itself where the line is a real argv); every
COW006_* variable is a setting (``cow006_platform.settings.Settings``) or one the SDK reads;
every ``module:object`` path imports; every file a Dockerfile copies exists; compose services
and Kubernetes objects only reference what is defined; HTTP probe paths are routes the app
serves; the worker's sandbox needs (uids, bubblewrap, namespaces, /proc) are met.  Each
failure names the file and the missing thing.
"""

from __future__ import annotations

import configparser
import importlib
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer
import yaml

from cow006 import cgroups, launch, sandbox
from cow006.sandbox import _host as sandbox_host
from cow006_platform.settings import Settings
from cow006_workers.cli import build_app

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKER = DEPLOY / "docker"
K8S = DEPLOY / "k8s"
SYSTEMD = DEPLOY / "systemd"
COMPOSE = DEPLOY / "compose.yaml"
DATA_MOUNT = "/var/lib/cow006/data"


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def deploy_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.is_file())


# -- the cow006 command -------------------------------------------------------------------
@cache
def root_command() -> Any:
    """The click command of the ``cow006`` Typer app (a group of groups and commands)."""
    return typer.main.get_command(build_app())


@cache
def click_module() -> ModuleType:
    """The exceptions of the click the command is built on: recent Typer ships its own copy
    (``typer._click``), whose exceptions are not ``click``'s."""
    base = next(c for c in type(root_command()).__mro__ if c.__name__ == "Command")
    return importlib.import_module(base.__module__.rsplit(".", 1)[0] + ".exceptions")


def _leaf(argv: list[str]) -> tuple[Any, list[str], list[str]]:
    """Walk ``cow006 a b ...`` down the command groups: (the command, its path, the rest)."""
    usage_error = click_module().UsageError
    command = root_command()
    path = ["cow006"]
    rest = argv[1:]
    while hasattr(command, "commands"):  # a group
        if not rest:
            raise usage_error(f"`{' '.join(path)}` needs a subcommand")
        sub = command.commands.get(rest[0])
        if sub is None:
            known = ", ".join(sorted(command.commands))
            raise usage_error(f"`{' '.join(path)}` has no command {rest[0]!r} ({known})")
        command, path, rest = sub, [*path, rest[0]], rest[1:]
    return command, path, rest


def check_argv(argv: list[str]) -> str | None:
    """A real argv (``cow006 worker --concurrency 2``): parsed by click as the command would
    be, values included.  None if it parses, else what is wrong."""
    try:
        command, path, rest = _leaf(argv)
        # Parses and converts every parameter (types, bounds, unknown options), runs nothing.
        command.make_context(" ".join(path), list(rest))
    except click_module().ClickException as exc:
        return f"`{shlex.join(argv)}`: {exc.format_message()}"
    return None


def check_names(argv: list[str]) -> str | None:
    """A command named in prose (``cow006 worker --concurrency N``): the command exists and
    has every option named; values may be placeholders."""
    try:
        command, _, rest = _leaf(argv)
    except click_module().ClickException as exc:
        return f"`{shlex.join(argv)}`: {exc.format_message()}"
    options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
    for token in rest:
        name = token.split("=", 1)[0]
        if name.startswith("-") and name != "-" and name not in options:
            return f"`{shlex.join(argv)}`: `{' '.join(argv[:2])}` has no option {name}"
    return None


# -- what the files name ---------------------------------------------------------------------
@dataclass(frozen=True)
class Argv:
    """A command line found in a file: ``exact`` when it is a real argv (not prose)."""

    where: str
    argv: tuple[str, ...]
    exact: bool


def _as_cow006(argv: list[str]) -> list[str] | None:
    """``/opt/cow006/venv/bin/cow006 api ...`` -> ``cow006 api ...``; None if not cow006."""
    if argv and Path(argv[0]).name == "cow006":
        return ["cow006", *argv[1:]]
    return None


def _docker_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile: continuations joined, comments dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        current = f"{current} {line}" if current else line
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        word, _, args = current.partition(" ")
        out.append((word.upper(), args.strip()))
        current = ""
    assert not current, f"{rel(path)}: a line continuation runs off the end of the file"
    return out


def _docker_argv(args: str) -> list[str]:
    """The argv of a CMD/ENTRYPOINT: the JSON exec form, or the shell form."""
    if args.startswith("["):
        value = json.loads(args)
        assert isinstance(value, list)
        return [str(v) for v in value]
    return shlex.split(args)


def dockerfiles() -> list[Path]:
    return sorted(p for p in DOCKER.glob("Dockerfile.*") if p.suffix != ".dockerignore")


def _healthcheck_argv(args: str) -> list[str]:
    """HEALTHCHECK [--options] CMD <argv>."""
    _options, sep, command = args.partition("CMD ")
    assert sep, f"HEALTHCHECK without CMD: {args}"
    return _docker_argv(command.strip())


def yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def k8s_objects() -> list[tuple[Path, dict[str, Any]]]:
    return [(p, d) for p in sorted(K8S.glob("*.yaml")) for d in yaml_docs(p)]


def _pod_containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _compose_argv(value: Any) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value)
    return [str(v) for v in value]


def _healthcheck_test(test: Any) -> list[str]:
    """compose's healthcheck ``test``: ["CMD", ...], ["CMD-SHELL", "..."] or a string."""
    argv = _compose_argv(test)
    if argv and argv[0] == "CMD":
        return argv[1:]
    if argv and argv[0] == "CMD-SHELL":
        return shlex.split(" ".join(argv[1:]))
    return argv


def systemd_units() -> list[Path]:
    return sorted(SYSTEMD.glob("*.service"))


def read_unit(path: Path) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(path.read_text())
    return parser


def exec_argv(value: str) -> list[str]:
    """systemd's ExecStart=: prefixes (-, @, +, !) dropped, then split like a shell."""
    return shlex.split(value.lstrip("-@+!:"))


def structured_argvs() -> Iterator[Argv]:
    """Every argv of the Dockerfiles, compose services, Kubernetes containers and probes,
    and systemd units."""
    for path in dockerfiles():
        for word, args in _docker_instructions(path):
            if word in ("CMD", "ENTRYPOINT"):
                yield Argv(f"{rel(path)} {word}", tuple(_docker_argv(args)), True)
            elif word == "HEALTHCHECK" and args.strip().upper() != "NONE":
                yield Argv(f"{rel(path)} HEALTHCHECK", tuple(_healthcheck_argv(args)), True)
    for name, service in _compose()["services"].items():
        where = f"{rel(COMPOSE)} services.{name}"
        if "command" in service:
            yield Argv(f"{where}.command", tuple(_compose_argv(service["command"])), True)
        if "healthcheck" in service and "test" in service["healthcheck"]:
            test = _healthcheck_test(service["healthcheck"]["test"])
            yield Argv(f"{where}.healthcheck", tuple(test), True)
    for path, obj in k8s_objects():
        for c in _pod_containers(obj):
            where = f"{rel(path)} {obj['kind']}/{obj['metadata']['name']} container {c['name']}"
            if "command" in c:
                argv = [*c["command"], *c.get("args", [])]
                yield Argv(f"{where} command", tuple(argv), True)
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if "exec" in c.get(probe, {}):
                    argv = c[probe]["exec"]["command"]
                    yield Argv(f"{where} {probe}", tuple(argv), True)
    for path in systemd_units():
        unit = read_unit(path)
        for key in ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop"):
            if unit.has_option("Service", key):
                argv = exec_argv(unit.get("Service", key))
                yield Argv(f"{rel(path)} {key}", tuple(argv), True)


_SPAN = re.compile(r"`(cow006 [^`\n]+)`")
_CODE_LINE = re.compile(r"^\s*(?:\$\s*)?(?:\S*/)?(cow006 [^#\n]*)")


def prose_argvs() -> Iterator[Argv]:
    """``cow006 ...`` in back-quotes anywhere in deploy/ (comments, the README), and on the
    lines of the README's code blocks."""
    for path in deploy_files():
        text = path.read_text()
        for m in _SPAN.finditer(text):
            yield Argv(rel(path), tuple(shlex.split(m.group(1))), False)
        if path.suffix == ".md":
            in_code = False
            for line in text.splitlines():
                if line.lstrip().startswith("```"):
                    in_code = not in_code
                    continue
                m = _CODE_LINE.match(line) if in_code else None
                if m:
                    yield Argv(rel(path), tuple(shlex.split(m.group(1))), False)


# -- commands ----------------------------------------------------------------------------------
def test_the_deploy_files_exist() -> None:
    expected = [
        DOCKER / "Dockerfile.api",
        DOCKER / "Dockerfile.worker",
        COMPOSE,
        K8S / "configmap.yaml",
        K8S / "secret.yaml",
        K8S / "pvc.yaml",
        K8S / "api.yaml",
        K8S / "worker.yaml",
        K8S / "beat.yaml",
        SYSTEMD / "cow006-api.service",
        SYSTEMD / "cow006-worker@.service",
        SYSTEMD / "cow006-beat.service",
        SYSTEMD / "cow006.env.example",
        DEPLOY / "README.md",
    ]
    missing = [rel(p) for p in expected if not p.is_file()]
    assert not missing, f"missing deployment files: {missing}"


def test_every_cow006_command_line_is_a_real_command() -> None:
    found = [a for a in structured_argvs() if _as_cow006(list(a.argv))]
    # The entry points the issue names are all there, as real argvs.
    named = {tuple(_as_cow006(list(a.argv)) or ())[:2] for a in found}
    for entry in (("cow006", "api"), ("cow006", "worker"), ("cow006", "beat")):
        assert entry in named, f"no file in deploy/ runs `{' '.join(entry)}`"
    problems = []
    for a in found:
        argv = _as_cow006(list(a.argv))
        assert argv is not None
        problem = check_argv(argv)
        if problem:
            problems.append(f"{a.where}: {problem}")
    assert not problems, "\n".join(problems)


def test_every_cow006_command_named_in_prose_exists() -> None:
    found = list(prose_argvs())
    assert found, "no `cow006 ...` command named in deploy/: the scan is broken"
    problems = [f"{a.where}: {p}" for a in found if (p := check_names(list(a.argv)))]
    assert not problems, "\n".join(problems)


def test_the_command_checks_can_fail() -> None:
    """The checks above reject what the app does not have (so they are not vacuous)."""
    assert check_argv(["cow006", "worker", "--concurrency", "2"]) is None
    assert check_argv(["cow006", "no-such-command"])
    assert check_argv(["cow006", "worker", "--no-such-option"])
    assert check_argv(["cow006", "worker", "--concurrency", "0"])  # min=1
    assert check_argv(["cow006", "db"])  # a group needs a subcommand
    assert check_names(["cow006", "api", "--port", "PORT"]) is None
    assert check_names(["cow006", "api", "--bogus"])


# -- environment variables -----------------------------------------------------------------
def known_env() -> set[str]:
    """COW006_* variables the code reads: the settings, and the SDK's own (the sandbox)."""
    settings = {f"COW006_{name.upper()}" for name in Settings.model_fields}
    sdk = {sandbox.ENV_MODE, "COW006_BWRAP", cgroups.ENV, cgroups.ENV_PARENT, launch.ENV_BOTLIBS}
    # Keep the SDK's list honest: the sandbox (and its launch module) really reads these names.
    modules = [p for m in (sandbox, cgroups) for p in Path(m.__path__[0]).glob("*.py")]
    modules.append(Path(launch.__file__))
    source = "".join(p.read_text() for p in modules)
    for name in sdk:
        assert name in source, f"cow006.sandbox no longer reads {name}: update this test"
    return settings | sdk


def test_every_cow006_variable_is_a_setting() -> None:
    known = known_env()
    problems = []
    for path in deploy_files():
        for name in sorted(set(re.findall(r"\bCOW006_[A-Z0-9_]*[A-Z0-9]", path.read_text()))):
            if name not in known:
                problems.append(f"{rel(path)}: {name} is no setting of the arena")
    assert not problems, "\n".join(problems) + f"\nknown: {sorted(known)}"


# -- Python paths ------------------------------------------------------------------------------
_OBJECT_PATH = re.compile(r"\b(cow006(?:_platform|_workers)?(?:\.\w+)+):([A-Za-z_]\w*)")


def test_every_module_object_path_resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    # Importing the Celery app builds it from the environment: point it at a broker URL that
    # creates no file (nothing connects at import).
    monkeypatch.setenv("COW006_BROKER_URL", "redis://127.0.0.1:1/0")
    found = {
        (rel(path), m.group(1), m.group(2))
        for path in deploy_files()
        for m in _OBJECT_PATH.finditer(path.read_text())
    }
    paths = {(module, name) for _, module, name in found}
    assert ("cow006_workers.celery_app", "app") in paths, "flower's Celery app is not named"
    problems = []
    for where, module, name in sorted(found):
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            problems.append(f"{where}: {module}:{name} does not resolve ({exc})")
            continue
        if name == "app" and module.endswith("celery_app"):
            assert obj.main == "cow006", f"{where}: {module}:{name} is not the arena's app"
    assert not problems, "\n".join(problems)


# -- Dockerfiles ---------------------------------------------------------------------------------
def _copy_sources(args: str) -> list[str]:
    parts = _docker_argv(args)  # the JSON form or the plain one: the same split
    parts = [p for p in parts if not p.startswith("--")]
    return parts[:-1]  # the last one is the destination


@pytest.mark.parametrize("name", ["Dockerfile.api", "Dockerfile.worker"])
def test_dockerfile(name: str) -> None:
    path = DOCKER / name
    steps = _docker_instructions(path)
    words = [w for w, _ in steps]
    assert steps[0] == ("FROM", "python:3.11-slim-bookworm"), f"{rel(path)}: base image"
    assert "HEALTHCHECK" in words, f"{rel(path)}: no HEALTHCHECK"
    assert "CMD" in words or "ENTRYPOINT" in words, f"{rel(path)}: no CMD"
    copied = [(w, a) for w, a in steps if w in ("COPY", "ADD")]
    assert copied, f"{rel(path)}: copies nothing from the repository"
    for word, args in copied:
        if "--from=" in args:
            continue
        for source in _copy_sources(args):
            # The build context is the repository root (compose.yaml builds with context ..).
            assert (ROOT / source).exists(), f"{rel(path)}: {word} {source}: no such path"
    runs = " ".join(a for w, a in steps if w == "RUN")
    # From the lock only (docs/installs.md): the packages by hash, then ours without deps.
    lock = re.search(r"pip install --require-hashes((?: -r requirements/\S+\.txt)+)", runs)
    assert lock, f"{rel(path)}: the packages are not installed from the lock"
    for req in lock.group(1).split()[1::2]:
        assert (ROOT / req).is_file(), f"{rel(path)}: {req}: no such lock file"
    assert re.search(r"pip install --no-deps (?:--no-build-isolation )?/src", runs), (
        f"{rel(path)}: the project is not installed (or not with --no-deps)"
    )


def test_the_api_image_runs_as_a_user() -> None:
    path = DOCKER / "Dockerfile.api"
    users = [a for w, a in _docker_instructions(path) if w == "USER"]
    assert users, f"{rel(path)}: no USER: the API would run as root"
    assert users[-1].split(":")[0] not in ("0", "root"), f"{rel(path)}: USER {users[-1]}"


def test_the_worker_image_has_the_sandbox() -> None:
    path = DOCKER / "Dockerfile.worker"
    runs = " ".join(a for w, a in _docker_instructions(path) if w == "RUN")
    install = re.search(r"apt-get install[^&]*", runs)
    assert install, f"{rel(path)}: no apt-get install"
    for package in ("bubblewrap", "libseccomp2"):
        assert package in install.group(0).split(), f"{rel(path)}: {package} is not installed"
    # The slot uids: uid_base .. uid_base + slots - 1, as the sandbox uses them.
    sb = sandbox.Sandbox()
    seq = re.search(r"seq (\d+) (\d+)", runs)
    base = re.search(r"\$\(\(\s*(\d+)\s*\+\s*n\s*\)\)", runs)
    assert seq and base, f"{rel(path)}: the slot uids are not created"
    uids = range(int(base.group(1)) + int(seq.group(1)), int(base.group(1)) + int(seq.group(2)))
    wanted = range(sb.uid_base, sb.uid_base + sb.slots - 1)
    assert uids == wanted, f"{rel(path)}: slot uids {uids}, the sandbox uses {wanted}"
    # Named so the sandbox accepts the uids as its own (cow006.sandbox._uids.uid_usable).
    assert re.search(r'useradd [^;]*"cow006-sb\$n"', runs), f"{rel(path)}: slot user names"
    # Root, so each bot gets its own uid (no USER, or USER root).
    users = [a for w, a in _docker_instructions(path) if w == "USER"]
    assert not users or users[-1].split(":")[0] in ("0", "root"), f"{rel(path)}: not root"
    # The bot libraries (docs/sandbox.md): from their lock into COW006_BOTLIBS, a directory
    # of their own (the sandbox binds it at /botlibs), never site-packages.
    env = " ".join(a for w, a in _docker_instructions(path) if w == "ENV")
    where = re.search(r"COW006_BOTLIBS=(/\S+)", env)
    assert where, f"{rel(path)}: COW006_BOTLIBS is not set"
    target = re.escape(where.group(1))
    botlibs = rf"pip install --require-hashes --no-deps --only-binary :all:\s+--target {target}"
    assert re.search(botlibs + r"\s+-r requirements/botlibs\.txt", runs), (
        f"{rel(path)}: the bot libraries are not installed from requirements/botlibs.txt "
        f"into {where.group(1)}"
    )
    assert "site-packages" not in where.group(1)


def test_dockerignore_files_keep_the_context_small() -> None:
    for path in dockerfiles():
        ignore = path.with_name(path.name + ".dockerignore")
        assert ignore.is_file(), f"{rel(ignore)} is missing"
        lines = set(ignore.read_text().split())
        for entry in (".git", ".venv", "var"):
            assert entry in lines, f"{rel(ignore)}: {entry} is not excluded"


# -- the routes probes ask for -------------------------------------------------------------------
@cache
def the_app() -> Any:
    from cow006_platform.app import create_app
    from cow006_workers.embedded import SynchronousExecutor

    settings = Settings(database_url="sqlite:///:memory:", data_dir=Path("/nonexistent"))
    # Building the app opens nothing (the lifespan, which would, does not run).
    return create_app(settings, SynchronousExecutor(settings))


def serves(path: str) -> bool:
    """Whether the app's route table has a GET route for ``path``: asked of the routes
    themselves (included routers resolve their own routes lazily in recent FastAPI)."""
    from starlette.routing import Match

    scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": []}
    for route in the_app().router.routes:
        match, _child_scope = route.matches(scope)
        if match == Match.FULL:
            return True
    return False


_LOCAL_URL = re.compile(r"http://127\.0\.0\.1:8000(/[^'\"\s)]*)")


def http_probe_paths() -> Iterator[tuple[str, str]]:
    """(where, path) of every HTTP probe of the API: k8s httpGet, and health checks that
    fetch http://127.0.0.1:8000/... (Dockerfiles, compose)."""
    for path, obj in k8s_objects():
        for c in _pod_containers(obj):
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if "httpGet" in c.get(probe, {}):
                    where = f"{rel(path)} {obj['metadata']['name']} {probe}"
                    yield where, c[probe]["httpGet"]["path"]
    for path in [*dockerfiles(), COMPOSE]:
        for m in _LOCAL_URL.finditer(path.read_text()):
            yield rel(path), m.group(1)


def test_probe_paths_are_routes_of_the_app() -> None:
    probes = list(http_probe_paths())
    used = {p for _, p in probes}
    assert {"/healthz", "/readyz"} <= used, f"probes use {sorted(used)}"
    assert serves("/api/ladders"), "the route table is not the arena's"
    assert not serves("/no/such/page"), "every path matches: the check would be vacuous"
    problems = [
        f"{where}: GET {p} is not a route of the app" for where, p in probes if not serves(p)
    ]
    assert not problems, "\n".join(problems)


def test_metrics_is_served_for_the_docs() -> None:
    """docs/operations.md and deploy/README.md point scrapers at /metrics."""
    assert serves("/metrics"), "the app serves no /metrics"


# -- compose -----------------------------------------------------------------------------------
def test_compose_services_and_references() -> None:
    data = _compose()
    services: dict[str, Any] = data["services"]
    for name in ("postgres", "redis", "api", "worker", "beat", "flower"):
        assert name in services, f"{rel(COMPOSE)}: no service {name}"
    volumes = set(data.get("volumes") or {})
    built = {s["image"] for s in services.values() if "build" in s and "image" in s}
    for name, service in services.items():
        where = f"{rel(COMPOSE)} services.{name}"
        assert "healthcheck" in service, f"{where}: no healthcheck"
        deps = service.get("depends_on", {})
        assert isinstance(deps, dict), f"{where}.depends_on: use the long form, with conditions"
        for dep, spec in deps.items():
            assert dep in services, f"{where}.depends_on: no service {dep}"
            assert "condition" in spec, f"{where}.depends_on.{dep}: no condition"
            assert "healthcheck" in services[dep] or spec["condition"] != "service_healthy", (
                f"{where}.depends_on.{dep}: service_healthy but {dep} has no healthcheck"
            )
        for mount in service.get("volumes", []):
            source = mount.split(":")[0] if isinstance(mount, str) else mount.get("source", "")
            if source and not source.startswith((".", "/", "~", "$")):
                assert source in volumes, f"{where}.volumes: no volume {source} defined"
        if "build" in service:
            build = service["build"]
            context = (COMPOSE.parent / build["context"]).resolve()
            assert context == ROOT, f"{where}.build.context is not the repository root"
            assert (context / build["dockerfile"]).is_file(), f"{where}: no {build['dockerfile']}"
        elif name.startswith(("api", "worker", "beat", "flower")):
            assert service.get("image") in built, (
                f"{where}: image {service.get('image')} is built by no service"
            )


def test_compose_arena_environment_and_shared_data() -> None:
    services = _compose()["services"]
    for name in ("api", "worker", "beat", "flower"):
        env = services[name].get("environment", {})
        where = f"{rel(COMPOSE)} services.{name}.environment"
        for key in ("COW006_DATABASE_URL", "COW006_BROKER_URL"):
            assert key in env, f"{where}: no {key}"
        assert env["COW006_BROKER_URL"].startswith("redis://"), f"{where}: not Redis"
        assert env["COW006_DATABASE_URL"].startswith("postgresql"), f"{where}: not PostgreSQL"
    mounts = {}
    for name in ("api", "worker"):
        env = services[name]["environment"]
        data_dir = env.get("COW006_DATA_DIR")
        assert data_dir, f"{rel(COMPOSE)} services.{name}: no COW006_DATA_DIR"
        found = [m.split(":")[0] for m in services[name]["volumes"] if m.split(":")[1] == data_dir]
        assert found, f"{rel(COMPOSE)} services.{name}: nothing mounted at {data_dir}"
        mounts[name] = found[0]
    assert mounts["api"] == mounts["worker"], f"{rel(COMPOSE)}: api and worker data differ"
    assert services["api"]["command"][:2] == ["cow006", "api"], "the api must migrate on start"
    worker = services["worker"]
    assert "container_name" not in worker, f"{rel(COMPOSE)}: a named worker cannot scale"
    opts = set(worker.get("security_opt", []))
    for opt in ("seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"):
        assert opt in opts, f"{rel(COMPOSE)} services.worker.security_opt: no {opt}"


# -- Kubernetes -------------------------------------------------------------------------------
def _objects_by_kind() -> dict[str, dict[str, tuple[Path, dict[str, Any]]]]:
    out: dict[str, dict[str, tuple[Path, dict[str, Any]]]] = {}
    for path, obj in k8s_objects():
        assert "namespace" not in obj["metadata"], f"{rel(path)}: manifests are namespace-less"
        out.setdefault(obj["kind"], {})[obj["metadata"]["name"]] = (path, obj)
    return out


def test_k8s_objects_and_references() -> None:
    kinds = _objects_by_kind()
    for kind, name in (
        ("Deployment", "cow006-api"),
        ("Deployment", "cow006-worker"),
        ("Deployment", "cow006-beat"),
        ("Service", "cow006-api"),
        ("ConfigMap", "cow006-config"),
        ("Secret", "cow006-secrets"),
        ("PersistentVolumeClaim", "cow006-data"),
    ):
        assert name in kinds.get(kind, {}), f"deploy/k8s: no {kind} {name}"
    pvc_path, pvc = kinds["PersistentVolumeClaim"]["cow006-data"]
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"], f"{rel(pvc_path)}: not RWX"
    config = kinds["ConfigMap"]["cow006-config"][1]["data"]
    for name, (path, dep) in kinds["Deployment"].items():
        where = f"{rel(path)} Deployment/{name}"
        labels = dep["spec"]["template"]["metadata"]["labels"]
        for key, value in dep["spec"]["selector"]["matchLabels"].items():
            assert labels.get(key) == value, f"{where}: the selector does not match the pods"
        pod = dep["spec"]["template"]["spec"]
        claims = {
            v["name"]: v["persistentVolumeClaim"]["claimName"]
            for v in pod.get("volumes", [])
            if "persistentVolumeClaim" in v
        }
        for claim in claims.values():
            assert claim in kinds["PersistentVolumeClaim"], f"{where}: no PVC {claim}"
        for c in pod["containers"]:
            for source in c.get("envFrom", []):
                if "configMapRef" in source:
                    ref = source["configMapRef"]["name"]
                    assert ref in kinds["ConfigMap"], f"{where}: no ConfigMap {ref}"
                if "secretRef" in source:
                    ref = source["secretRef"]["name"]
                    assert ref in kinds["Secret"], f"{where}: no Secret {ref}"
            for mount in c.get("volumeMounts", []):
                assert mount["name"] in {v["name"] for v in pod.get("volumes", [])}, (
                    f"{where}: volumeMount {mount['name']} has no volume"
                )
                if mount["name"] in claims:
                    assert mount["mountPath"] == config["COW006_DATA_DIR"], (
                        f"{where}: the data volume is not at COW006_DATA_DIR"
                    )
    for name in ("cow006-api", "cow006-worker"):
        path, dep = kinds["Deployment"][name]
        pod = dep["spec"]["template"]["spec"]
        assert any("persistentVolumeClaim" in v for v in pod["volumes"]), (
            f"{rel(path)}: {name} does not mount the shared data volume"
        )


def test_k8s_commands_and_probes() -> None:
    kinds = _objects_by_kind()
    deployments = kinds["Deployment"]
    expected = {"cow006-api": "api", "cow006-worker": "worker", "cow006-beat": "beat"}
    for name, sub in expected.items():
        path, dep = deployments[name]
        container = dep["spec"]["template"]["spec"]["containers"][0]
        assert container["command"][:2] == ["cow006", sub], f"{rel(path)}: {name} command"
        assert "readinessProbe" in container, f"{rel(path)}: {name} has no readinessProbe"
        assert "livenessProbe" in container, f"{rel(path)}: {name} has no livenessProbe"
    api_path, api = deployments["cow006-api"]
    api_c = api["spec"]["template"]["spec"]["containers"][0]
    assert api_c["readinessProbe"]["httpGet"]["path"] == "/readyz", f"{rel(api_path)}: readiness"
    assert api_c["livenessProbe"]["httpGet"]["path"] == "/healthz", f"{rel(api_path)}: liveness"
    ports = {p.get("name") for p in api_c["ports"]} | {p["containerPort"] for p in api_c["ports"]}
    svc_path, svc = kinds["Service"]["cow006-api"]
    labels = api["spec"]["template"]["metadata"]["labels"]
    for key, value in svc["spec"]["selector"].items():
        assert labels.get(key) == value, f"{rel(svc_path)}: the selector misses the API pods"
    for port in svc["spec"]["ports"]:
        assert port["targetPort"] in ports, f"{rel(svc_path)}: targetPort {port['targetPort']}"
    worker_path, worker = deployments["cow006-worker"]
    worker_c = worker["spec"]["template"]["spec"]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        argv = worker_c[probe].get("exec", {}).get("command")
        assert argv == ["cow006", "ready", "--worker"], f"{rel(worker_path)}: {probe} {argv}"
    beat_path, beat = deployments["cow006-beat"]
    assert beat["spec"]["replicas"] == 1, f"{rel(beat_path)}: more than one scheduler"
    assert beat["spec"]["strategy"]["type"] == "Recreate", f"{rel(beat_path)}: not Recreate"


def test_k8s_worker_security_context_lets_bwrap_run() -> None:
    path, worker = _objects_by_kind()["Deployment"]["cow006-worker"]
    pod = worker["spec"]["template"]["spec"]
    c = pod["containers"][0]
    sc = c.get("securityContext", {})
    seccomp = sc.get("seccompProfile") or pod.get("securityContext", {}).get("seccompProfile")
    assert seccomp and seccomp["type"] in ("Unconfined", "Localhost"), (
        f"{rel(path)}: the default seccomp profile refuses bwrap's namespaces"
    )
    assert sc.get("appArmorProfile", {}).get("type") in ("Unconfined", "Localhost"), (
        f"{rel(path)}: the default AppArmor profile refuses bwrap's mounts"
    )
    assert sc.get("procMount") == "Unmasked" or sc.get("privileged"), (
        f"{rel(path)}: a masked /proc makes the kernel refuse the bots' /proc"
    )
    if sc.get("procMount") == "Unmasked":
        assert pod.get("hostUsers") is False, f"{rel(path)}: Unmasked needs hostUsers: false"
    assert sc.get("runAsUser") == 0, f"{rel(path)}: per-slot uids need root in the pod"
    added = set(sc.get("capabilities", {}).get("add", []))
    assert {"SETUID", "SETGID", "KILL"} <= added, f"{rel(path)}: capabilities {added}"
    assert sc.get("capabilities", {}).get("drop") == ["ALL"], f"{rel(path)}: drop ALL first"


# -- systemd -----------------------------------------------------------------------------------
def test_systemd_units() -> None:
    names = {p.name for p in systemd_units()}
    assert {"cow006-api.service", "cow006-worker@.service", "cow006-beat.service"} <= names
    env_example = SYSTEMD / "cow006.env.example"
    keys = {
        line.split("=", 1)[0]
        for line in env_example.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for key in ("COW006_DATABASE_URL", "COW006_BROKER_URL", "COW006_DATA_DIR"):
        assert key in keys, f"{rel(env_example)}: no {key}"
    for path in systemd_units():
        unit = read_unit(path)
        for section in ("Unit", "Service", "Install"):
            assert unit.has_section(section), f"{rel(path)}: no [{section}]"
        env_file = unit.get("Service", "EnvironmentFile", fallback="").lstrip("-")
        assert env_file == "/etc/cow006/cow006.env", f"{rel(path)}: EnvironmentFile={env_file}"
        argv = _as_cow006(exec_argv(unit.get("Service", "ExecStart")))
        assert argv, f"{rel(path)}: ExecStart is not cow006"
        assert unit.get("Service", "NoNewPrivileges") == "yes", f"{rel(path)}: NoNewPrivileges"


def _words(unit: configparser.RawConfigParser, key: str) -> set[str]:
    return set(unit.get("Service", key, fallback="").split())


def test_systemd_worker_hardening_leaves_bwrap_working() -> None:
    path = SYSTEMD / "cow006-worker@.service"
    unit = read_unit(path)
    assert unit.get("Service", "User") == "root", f"{rel(path)}: per-slot uids need root"
    namespaces = _words(unit, "RestrictNamespaces")
    needed = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}
    assert not namespaces or namespaces in ({"no"}, {"false"}) or needed <= namespaces, (
        f"{rel(path)}: RestrictNamespaces must allow {sorted(needed - namespaces)}"
    )
    families = _words(unit, "RestrictAddressFamilies")
    assert not families or {"AF_UNIX", "AF_NETLINK", "AF_INET"} <= families, (
        f"{rel(path)}: RestrictAddressFamilies lacks what bwrap and the worker need"
    )
    for key in (
        "ProtectKernelTunables",
        "ProtectKernelLogs",
        "PrivateUsers",
        "MemoryDenyWriteExecute",
    ):
        assert unit.get("Service", key, fallback="no") in ("no", "false"), (
            f"{rel(path)}: {key} breaks the sandbox"
        )
    for key in ("ProtectProc", "ProcSubset", "SystemCallFilter"):
        assert not unit.has_option("Service", key), f"{rel(path)}: {key} breaks the sandbox"
    caps = _words(unit, "CapabilityBoundingSet")
    assert {"CAP_SETUID", "CAP_SETGID", "CAP_KILL"} <= caps, f"{rel(path)}: capabilities"
    assert unit.get("Service", "KillMode") == "mixed", f"{rel(path)}: warm shutdown needs mixed"


def test_systemd_worker_directories_are_the_sandboxs(monkeypatch: pytest.MonkeyPatch) -> None:
    """RuntimeDirectory= and CacheDirectory= are where the sandbox keeps its slot locks and
    staged runtimes when it runs as root."""
    path = SYSTEMD / "cow006-worker@.service"
    unit = read_unit(path)
    monkeypatch.setattr(sandbox_host, "is_root", lambda: True)
    sb = sandbox.Sandbox()
    runtime = {Path("/run") / d for d in _words(unit, "RuntimeDirectory")}
    cache_dirs = {Path("/var/cache") / d for d in _words(unit, "CacheDirectory")}
    assert sb.state_path() in runtime, f"{rel(path)}: RuntimeDirectory is not {sb.state_path()}"
    assert sb.cache_path() in cache_dirs, f"{rel(path)}: CacheDirectory lacks {sb.cache_path()}"
    assert unit.get("Service", "RuntimeDirectoryPreserve") == "yes", (
        f"{rel(path)}: instances share the slot locks: one stopping must not remove them"
    )


def test_the_readme_names_every_file() -> None:
    readme = (DEPLOY / "README.md").read_text()
    missing = [rel(p) for p in deploy_files() if p.name != "README.md" and p.name not in readme]
    assert not missing, f"deploy/README.md does not describe {missing}"


def test_systemd_worker_delegates_its_cgroup() -> None:
    """The slot cgroups (cow006.cgroups) are made in the worker's own cgroup: systemd must
    delegate it, and leave /sys/fs/cgroup writable."""
    path = SYSTEMD / "cow006-worker@.service"
    unit = read_unit(path)
    assert unit.get("Service", "Delegate", fallback="no") == "yes", f"{rel(path)}: Delegate=yes"
    assert unit.get("Service", "ProtectControlGroups", fallback="no") in ("no", "false"), (
        f"{rel(path)}: ProtectControlGroups makes the slot cgroups impossible"
    )
