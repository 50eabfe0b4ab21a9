#!/usr/bin/env bash
# Issue 7's "done when", on the lent GPU machine: the seed README's "Custom JIT Kernel" block runs
# unchanged and really scales x by 0.5 (checked against NumPy), in a venv WITHOUT system
# site-packages where NVRTC came from NVIDIA's wheel (nvidia-cuda-nvrtc), with the CUDA Toolkit
# off PATH/LD_LIBRARY_PATH and CUDA_HOME/CUDA_PATH unset.
#
#   device: bash ci/gpu-jit-venv.sh        (called by ci/gpu-check; carry [".gpu"])
#
# Wheels: ours and numpy/ml_dtypes from $WHEELS (.gpu/wheels, staged by `nox -s gpu_prepare`).
# The machine has no network, and NVIDIA's nvidia-cuda-nvrtc wheel (~90 MB) is more than a call
# can carry. The machine's python3 has nvidia-cuda-nvrtc, nvidia-cuda-runtime and
# cuda-pathfinder installed from NVIDIA's wheels, so each one missing from $WHEELS is rebuilt as
# a wheel from its installed files: the same name, version and tags (the dist-info's WHEEL), the
# files listed in its RECORD, each checked against the sha256 in that RECORD (the bytes the
# original wheel installed; a changed file stops the script), a RECORD written anew; the
# installer's own files (INSTALLER, REQUESTED, direct_url.json) and byte-compiled caches left
# out. pip then installs `pygpukit[jit]` from those with --no-index like any wheel.
#
# The seed README: $PYGPUKIT_SEED_README, else .gpu/seeds/pygpukit-readme-v0.2.5.md (staged by
# gpu_prepare), else shared/seeds/ inside or beside the checkout. The "Custom JIT Kernel" block is
# extracted verbatim and run with `gp` imported and `x` a (1024, 1024) float32 array as in the
# README's Basic Operations block, but random (the seed's x is zeros, which would hide a kernel
# that does nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WHEELS=${WHEELS:-$ROOT/.gpu/wheels}
PY=${PYTHON:-python3}
VENV=${PYGPUKIT_JIT_VENV:-/tmp/pgk-jit-venv}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' packages/pygpukit/pyproject.toml)
[ -d "$WHEELS" ] || { echo "no $WHEELS: run 'nox -s gpu_prepare' first and carry .gpu"; exit 2; }
SEED=${PYGPUKIT_SEED_README:-}
for c in "$ROOT/.gpu/seeds/pygpukit-readme-v0.2.5.md" "$ROOT/shared/seeds/pygpukit-readme-v0.2.5.md" \
         "$ROOT/../shared/seeds/pygpukit-readme-v0.2.5.md"; do
  [ -n "$SEED" ] && break
  [ -f "$c" ] && SEED=$c
done
[ -n "$SEED" ] && [ -f "$SEED" ] || { echo "seed README not found (set PYGPUKIT_SEED_README)"; exit 2; }
SEED=$(realpath "$SEED")
LOCAL=$(mktemp -d /tmp/pgk-jit-wheels.XXXXXX)
trap 'rm -rf "$LOCAL"' EXIT

echo "--- NVIDIA's wheels, rebuilt from the machine python's installed files where not staged"
"$PY" - "$LOCAL" "$WHEELS" nvidia-cuda-nvrtc nvidia-cuda-runtime cuda-pathfinder <<'PY'
import base64, csv, hashlib, io, os, re, sys, zipfile
import importlib.metadata as md
from pathlib import Path

out, staged, wanted = Path(sys.argv[1]), Path(sys.argv[2]), list(sys.argv[3:])
SKIP = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}
done = set()


def b64sha(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


while wanted:
    name = re.sub(r"[-_.]+", "-", wanted.pop(0)).lower()
    if name in done:
        continue
    done.add(name)
    norm = name.replace("-", "_")
    if sorted(staged.glob(f"{norm}-*.whl")):
        print(f"{name}: staged in {staged}")
        continue
    dist = md.distribution(name)
    info = Path(dist._path)  # the .dist-info folder
    site = info.parent
    tags = [ln.split(":", 1)[1].strip() for ln in (info / "WHEEL").read_text().splitlines()
            if ln.startswith("Tag:")]
    parts = [sorted({t.split("-")[i] for t in tags}) for i in range(3)]
    fname = f"{norm}-{dist.version}-" + "-".join(".".join(p) for p in parts) + ".whl"
    record, skipped = [], []
    with zipfile.ZipFile(out / fname, "w", zipfile.ZIP_STORED) as whl:
        for row in csv.reader((info / "RECORD").read_text().splitlines()):
            if not row:
                continue
            rel, digest = row[0], row[1] if len(row) > 1 else ""
            in_info = rel.startswith(info.name + "/")
            if os.path.normpath(rel).startswith("..") or "__pycache__" in rel or (
                    in_info and rel.split("/")[-1] in SKIP):
                skipped.append(rel)
                continue
            path = site / rel
            data = path.read_bytes()
            if not digest:
                raise SystemExit(f"{name}: {rel} has no hash in RECORD; cannot vouch for it")
            if b64sha(data) != digest:
                raise SystemExit(f"{name}: {rel} differs from its RECORD hash (changed since "
                                 "install): refusing to rebuild the wheel")
            zi = zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (path.stat().st_mode & 0xFFFF) << 16
            whl.writestr(zi, data)
            record.append([rel, digest, str(len(data))])
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(record + [[f"{info.name}/RECORD", "", ""]])
        whl.writestr(f"{info.name}/RECORD", buf.getvalue())
    caches = [s for s in skipped if "__pycache__" in s]
    others = [s for s in skipped if s not in caches]
    print(f"{name} {dist.version}: {fname} from {site} ({len(record)} files checked against "
          f"RECORD; left out: {', '.join(others) or 'none'}"
          + (f" and {len(caches)} byte-compiled caches" if caches else "") + ")")
    for req in dist.requires or []:
        if "extra ==" not in req:
            wanted.append(re.match(r"[A-Za-z0-9._-]+", req).group(0))
PY
ls -l "$LOCAL"

echo "--- venv without system site-packages, no CUDA Toolkit on PATH/LD_LIBRARY_PATH"
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v -i cuda | paste -sd:)
LD_LIBRARY_PATH=$(tr ':' '\n' <<<"${LD_LIBRARY_PATH:-}" | grep -v -i cuda | paste -sd: || true)
export PATH LD_LIBRARY_PATH
unset CUDA_HOME CUDA_PATH PYTHONPATH PYGPUKIT_NVRTC_PATH
echo "PATH=$PATH"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
V=$VENV/bin/python
"$V" -c "import sys; assert sys.prefix != sys.base_prefix; import site; print('venv', sys.prefix)"
"$V" -m pip install -q --no-index --no-cache-dir --find-links "$WHEELS" --find-links "$LOCAL" \
  "pygpukit[jit]==$VERSION"
"$V" -m pip list --format=freeze

echo "--- the seed README's Custom JIT Kernel block, unchanged"
cd /tmp
PYGPUKIT_CACHE_DIR=$(mktemp -d /tmp/pgk-jit-cache.XXXXXX) "$V" - "$SEED" <<'PY'
import contextlib, io, os, re, sys
import numpy as np

readme = open(sys.argv[1], encoding="utf-8").read()


def block(title: str) -> str:
    m = re.search(r"^### " + re.escape(title) + r"[^\n]*\n```python\n(.*?)^```", readme, re.S | re.M)
    assert m, f"no '{title}' block in {sys.argv[1]}"
    return m.group(1)


jit_block = block("Custom JIT Kernel")
print(jit_block)
import pygpukit as gp

assert gp.backend() == "cuda", gp.backend()
# The README's `x` comes from its Basic Operations block: gp.zeros((1024, 1024), "float32").
# Same shape and dtype here, random values: scaling zeros would hide a kernel that does nothing.
host = np.random.default_rng(7).standard_normal((1024, 1024)).astype(np.float32)
scope: dict = {"gp": gp, "x": gp.from_numpy(host)}
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    exec(compile(jit_block, "<seed README: Custom JIT Kernel>", "exec"), scope)
assert "JIT not available" not in printed.getvalue(), printed.getvalue()
assert isinstance(scope.get("kernel"), gp.JITKernel), "the block did not take the JIT branch"
got = scope["x"].to_numpy()
want = host * np.float32(0.5)
print("scaled by 0.5, equal to NumPy:", bool(np.array_equal(got, want)),
      "| max abs diff:", float(np.abs(got.astype(np.float64) - want).max()))
assert np.array_equal(got, want)

import pygpukit_nvrtc

nvrtc = os.path.realpath(pygpukit_nvrtc.path())
prefix = os.path.realpath(sys.prefix)
maps = {ln.split()[-1] for ln in open("/proc/self/maps") if "nvrtc" in ln and "/" in ln}
print("NVRTC", ".".join(map(str, pygpukit_nvrtc.version())), "loaded from", nvrtc,
      f"(found via {pygpukit_nvrtc.found_via()})")
print("NVRTC libraries mapped in this process:", sorted(maps))
assert nvrtc.startswith(prefix + os.sep), f"NVRTC {nvrtc} is not inside the venv {prefix}"
assert all(os.path.realpath(m).startswith(prefix + os.sep) for m in maps), maps
print("pygpukit", gp.__version__, "| Python", sys.version.split()[0], "| venv:", prefix)
print("JIT VENV CHECK: PASSED")
PY
