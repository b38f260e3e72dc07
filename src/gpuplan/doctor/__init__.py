"""``gpuplan doctor``: check a GPU machine against its plan.

Facts first (probes with an injected runner and NVML), checks second, rendering last.
Exit codes: 0 every check passed (or was skipped), 1 some warning, 2 some failure or no GPU
(also for an unusable ``--plan``). Never imports torch without ``bench=True`` and never touches
the network without ``instance_metadata=True``.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable
from typing import Any, TextIO

from gpuplan.i18n import _
from gpuplan.errors import GpuplanError

__all__ = ["run_doctor", "EXIT_OK", "EXIT_WARN", "EXIT_FAIL"]

EXIT_OK, EXIT_WARN, EXIT_FAIL = 0, 1, 2
_DEFAULT = object()


def run_doctor(plan_dir: pathlib.Path | None = None, bench: bool = False, as_json: bool = False,
               lang: str = "en", instance_metadata: bool = False, runner: Any = None, nvml: Any = _DEFAULT,
               out: TextIO | None = None, *, metadata_fetcher: Callable[[], str | None] | None = None,
               torch_module: Any = None, metadata_version: Callable[[str], str | None] | None = None,
               bench_options: dict[str, Any] | None = None) -> int:
    """Probe, benchmark (optional), check and print; return the exit code (0 / 1 / 2).

    ``runner``/``nvml``/``metadata_fetcher``/``torch_module``/``metadata_version`` replace the
    machine in tests. ``nvml=None`` means "NVML unavailable"; leave it out to use nvidia-ml-py.
    """
    out = out or sys.stdout
    from gpuplan.i18n import use_lang  # noqa: PLC0415

    with use_lang("en" if as_json else lang):   # text made deep inside (`_()`) follows --lang; JSON stays English
        return _run_guarded(plan_dir, bench, as_json, lang, instance_metadata, runner, nvml, out, metadata_fetcher,
                            torch_module, metadata_version, bench_options)


def _run_guarded(plan_dir, bench, as_json, lang, instance_metadata, runner, nvml, out, metadata_fetcher,
                 torch_module, metadata_version, bench_options) -> int:
    try:
        return _run(plan_dir, bench, as_json, lang, instance_metadata, runner, nvml, out,
                    metadata_fetcher, torch_module, metadata_version, bench_options or {})
    except GpuplanError as exc:
        return _error(out, as_json, exc.message, exc.hint_for("cli"), lang)
    except Exception as exc:  # noqa: BLE001 - the doctor must never show a traceback
        from gpuplan.doctor.i18n import t  # noqa: PLC0415

        lg = "en" if as_json else lang
        return _error(out, as_json, t("internal", lg, error=f"{type(exc).__name__}: {exc}"), t("fix.internal", lg), lang)


def _error(out: TextIO, as_json: bool, message: str, hint: str, lang: str = "en") -> int:
    if as_json:
        from gpuplan.doctor.report import write_json  # noqa: PLC0415

        write_json({"error": message, "hint": hint}, out)
    else:
        from gpuplan.i18n import tr  # noqa: PLC0415

        out.write(f"{tr('Error', lang)}: {message}\n" + (f"{tr('Hint', lang)}: {hint}\n" if hint else ""))
    return EXIT_FAIL


def _run(plan_dir, bench, as_json, lang, instance_metadata, runner, nvml, out, metadata_fetcher,
         torch_module, metadata_version, bench_options) -> int:
    from gpuplan.doctor import checks as ck  # noqa: PLC0415 - keep `import gpuplan.doctor` cheap
    from gpuplan.doctor.nvml import load_nvml  # noqa: PLC0415
    from gpuplan.doctor.plan import expectations, load_plan  # noqa: PLC0415
    from gpuplan.doctor.probes import collect_facts, fetch_instance_type  # noqa: PLC0415
    from gpuplan.doctor.report import render_text, to_json, write_json  # noqa: PLC0415
    from gpuplan.doctor.runner import SystemRunner  # noqa: PLC0415
    from gpuplan.doctor.verdict import exit_code  # noqa: PLC0415

    exp = expectations(load_plan(plan_dir)) if plan_dir is not None else expectations(None)
    runner = runner or SystemRunner()
    nvml_mod = load_nvml() if nvml is _DEFAULT else nvml
    fetcher = (metadata_fetcher or fetch_instance_type) if instance_metadata else None

    torch = None
    torch_error = None
    if bench:
        torch, torch_error = _import_torch(torch_module)
    facts = collect_facts(runner, nvml_mod, import_torch=torch is not None, metadata_fetcher=fetcher,
                          metadata_version=metadata_version, torch_module=torch)

    bench_result: dict[str, Any] | None = None
    if bench:
        if torch is None:
            bench_result = {"error": torch_error}
        else:
            from gpuplan.doctor.bench import run_benchmarks  # noqa: PLC0415
            from gpuplan.doctor.checks import data_mount  # noqa: PLC0415

            opts = dict(bench_options)  # tests force device_kind="cpu" to run the CPU path
            if "device_kind" not in opts:
                opts["device_kind"] = "cuda" if torch.cuda.is_available() else None
            if not facts.gpus and opts["device_kind"] != "cpu":
                bench_result = {"skipped": "no NVIDIA GPU"}
            elif opts["device_kind"] is None:
                bench_result = {"error": "torch cannot use the GPU (torch.cuda.is_available() is False: "
                                         "a CPU-only build, or a CUDA build newer than the driver)"}
            else:
                if "disk_dir" not in opts and exp.required_read_mb_s:
                    m = data_mount(facts)
                    opts["disk_dir"] = m.path if m else None
                bench_result = run_benchmarks(torch, **opts)

    results = ck.run_checks(facts, exp, bench_result)
    code = exit_code(results)
    if as_json:
        write_json(to_json(facts, results, bench_result, code), out)
    else:
        render_text(facts, results, bench_result, code, out, lang)
    return code


def _import_torch(torch_module: Any) -> tuple[Any, str | None]:
    if torch_module is not None:
        return torch_module, None
    try:
        import torch  # noqa: PLC0415 - only with --bench
    except ImportError as exc:
        return None, _("PyTorch is not installed ({error})").format(error=exc)
    return torch, None
