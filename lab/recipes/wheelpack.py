#!/usr/bin/env python3
"""Pack a series of wheels for the trip to the GPU machine, whose calls carry at most 64 MiB.

Why: ten numba-cuda-mlir wheels are 71-85 MB each, but most of their bytes repeat from release to
release (the same files, or the same shared library rebuilt). A wheel is a zip that compresses each
file alone, so nothing is shared between releases. Here every wheel is unpacked, identical files
(by sha256) are kept once, and the remaining contents are laid out path by path with the releases of
one path side by side (the 170 MB ``libMLIRPythonCAPI.so`` of 0.5.3 right before 0.5.4's), then one
compressor with a window longer than the largest file (``zstd --long``, or ``xz`` with a large
dictionary) finds what repeats. The stream is cut into parts of at most ``--part-mb`` MiB.

    python3 lab/recipes/wheelpack.py pack OUT WHEEL...  [--codec zstd|xz] [--part-mb 60] [--level N]
    python3 lab/recipes/wheelpack.py unpack OUT DEST    # every part of OUT in place -> DEST/*.whl

``unpack`` rebuilds each wheel as a zip of the same files (same names, bytes and modes, so its RECORD
hashes hold and pip installs it), stored uncompressed (about 220 MB each for numba-cuda-mlir); the zip
itself is not byte-identical to the original.
Standard library only; the compressor is the ``zstd`` or ``xz`` program (``xz`` is on most hosts;
``--codec xz`` where ``zstd`` is missing). Writes OUT/manifest.json (what each wheel holds) and
OUT/stream.<codec>.partNN.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile

MIB = 1024 * 1024
CODECS = {
    # long window: 2**28 = 256 MiB covers one library and its predecessor (170 MB each)
    "zstd": (lambda level: ["zstd", "-q", "-c", f"-{level}", "--long=28", "-T0"],
             lambda: ["zstd", "-q", "-d", "-c", "--long=28"], 19),
    "xz": (lambda level: ["xz", "-c", "-T1", f"--lzma2=preset={level},dict=384MiB"],
           lambda: ["xz", "-d", "-c"], 6),
}


def die(msg: str) -> None:
    print(f"wheelpack: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def plan(wheels: list) -> tuple[dict, list]:
    """The manifest (per wheel: its members in order, each with sha256 and mode) and the blob order:
    unique contents sorted by member path, then by wheel order (releases of one file side by side)."""
    manifest = {"format": 1, "wheels": []}
    first: dict = {}  # sha256 -> (path, wheel index, member)
    for i, whl in enumerate(wheels):
        members = []
        with zipfile.ZipFile(whl) as z:
            for info in z.infolist():
                if info.is_dir():
                    continue
                h = hashlib.sha256()
                with z.open(info) as fh:
                    for chunk in iter(lambda: fh.read(MIB), b""):
                        h.update(chunk)
                digest = h.hexdigest()
                members.append({"name": info.filename, "sha256": digest, "size": info.file_size,
                                "mode": info.external_attr >> 16})  # file type and permissions
                # strip the "numba_cuda_mlir-0.6.0.dist-info/" style prefix so releases line up
                key = info.filename.split("/", 1)[-1] if ".dist-info/" in info.filename else info.filename
                first.setdefault(digest, (key, i, info.filename))
        manifest["wheels"].append({"file": os.path.basename(whl), "members": members})
    order = sorted(first.items(), key=lambda kv: (kv[1][0], kv[1][1]))
    return manifest, [(digest, idx, name) for digest, (_key, idx, name) in order]


def pack(out: str, wheels: list, codec: str, part_mb: int, level: int | None) -> None:
    if os.path.exists(out) and os.listdir(out):
        die(f"{out} is not empty; give a new folder")
    for w in wheels:
        if not (w.endswith(".whl") and os.path.isfile(w)):
            die(f"{w} is not a wheel file")
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    manifest, blobs = plan(wheels)
    comp, _dec, default_level = CODECS[codec]
    proc = subprocess.Popen(comp(level or default_level), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    limit, part, written, parts = part_mb * MIB, None, 0, []
    import threading

    def drain():
        nonlocal part, written
        while True:
            chunk = proc.stdout.read(MIB)
            if not chunk:
                break
            while chunk:
                if part is None or written == limit:
                    if part:
                        part.close()
                    name = f"stream.{codec}.part{len(parts) + 1:02d}"
                    parts.append(name)
                    part, written = open(os.path.join(out, name), "wb"), 0
                take = chunk[:limit - written]
                part.write(take)
                written += len(take)
                chunk = chunk[len(take):]
        if part:
            part.close()

    reader = threading.Thread(target=drain)
    reader.start()
    raw = 0
    opened: dict = {}
    for digest, idx, name in blobs:
        z = opened.get(idx) or opened.setdefault(idx, zipfile.ZipFile(wheels[idx]))
        with z.open(name) as fh:
            for chunk in iter(lambda: fh.read(MIB), b""):
                proc.stdin.write(chunk)
                raw += len(chunk)
    proc.stdin.close()
    reader.join()
    if proc.wait() != 0:
        die(f"{codec} failed (exit {proc.returncode})")
    manifest.update(codec=codec, blobs=[d for d, _i, _n in blobs], parts=parts)
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    packed = sum(os.path.getsize(os.path.join(out, p)) for p in parts)
    wheel_bytes = sum(os.path.getsize(w) for w in wheels)
    unpacked = sum(m["size"] for w in manifest["wheels"] for m in w["members"])
    print(f"wheelpack: {len(wheels)} wheels {wheel_bytes / MIB:.1f} MiB (unpacked {unpacked / MIB:.1f} MiB, "
          f"{raw / MIB:.1f} MiB after dropping repeated files) -> {packed / MIB:.1f} MiB in {len(parts)} "
          f"part(s) of at most {part_mb} MiB, {codec}, {time.monotonic() - t0:.0f} s")


def unpack(out: str, dest: str) -> None:
    try:
        with open(os.path.join(out, "manifest.json")) as fh:
            manifest = json.load(fh)
    except OSError as exc:
        die(f"cannot read {out}/manifest.json ({exc.strerror}); bring every part and the manifest")
    missing = [p for p in manifest["parts"] if not os.path.isfile(os.path.join(out, p))]
    if missing:
        die(f"missing part(s) in {out}: {', '.join(missing)}; bring them first")
    os.makedirs(dest, exist_ok=True)
    sizes = {m["sha256"]: m["size"] for w in manifest["wheels"] for m in w["members"]}
    store = os.path.join(dest, ".blobs")
    os.makedirs(store, exist_ok=True)
    _comp, dec, _lvl = CODECS[manifest["codec"]]
    cat = subprocess.Popen(["cat", *[os.path.join(out, p) for p in manifest["parts"]]], stdout=subprocess.PIPE)
    proc = subprocess.Popen(dec(), stdin=cat.stdout, stdout=subprocess.PIPE)
    cat.stdout.close()
    for digest in manifest["blobs"]:
        left, h = sizes[digest], hashlib.sha256()
        with open(os.path.join(store, digest), "wb") as fh:
            while left:
                chunk = proc.stdout.read(min(left, MIB))
                if not chunk:
                    die("the stream ended early; a part is truncated")
                h.update(chunk)
                fh.write(chunk)
                left -= len(chunk)
        if h.hexdigest() != digest:
            die(f"sha256 mismatch for blob {digest[:12]}; copy the parts again")
    proc.stdout.close()
    if proc.wait() != 0 or cat.wait() != 0:
        die("decompressing failed")
    for w in manifest["wheels"]:
        target = os.path.join(dest, w["file"])
        tmp = target + ".tmp"
        # stored, not deflated: a wheel may be either, and deflating 2 GB again took minutes
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
            for m in w["members"]:
                info = zipfile.ZipInfo(m["name"], date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (m["mode"] or 0o100644) << 16
                info.compress_type = zipfile.ZIP_STORED
                with open(os.path.join(store, m["sha256"]), "rb") as src, z.open(info, "w") as dst:
                    for chunk in iter(lambda: src.read(MIB), b""):
                        dst.write(chunk)
        os.replace(tmp, target)
        print(f"wheelpack: {target}")
    for digest in manifest["blobs"]:
        os.unlink(os.path.join(store, digest))
    os.rmdir(store)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pack")
    a.add_argument("out")
    a.add_argument("wheels", nargs="+")
    a.add_argument("--codec", choices=sorted(CODECS), default="zstd")
    a.add_argument("--part-mb", type=int, default=60)
    a.add_argument("--level", type=int, default=None)
    b = sub.add_parser("unpack")
    b.add_argument("out")
    b.add_argument("dest")
    args = p.parse_args(argv)
    if args.cmd == "pack":
        pack(args.out, args.wheels, args.codec, args.part_mb, args.level)
    else:
        unpack(args.out, args.dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
