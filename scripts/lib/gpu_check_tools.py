#!/usr/bin/env python3
"""Helpers of scripts/gpu-check, scripts/prepare-gpu-run and scripts/rehearse-gpu-run for the
conditions of a lending tool that runs one command on a GPU host and brings back only plain
files: at most 8 of them, 16 MiB each, 64 MiB in all, no deeper than two folders, with names
made of [A-Za-z0-9._-]; the tree it sends is at most 64 MiB.

  gpu_check_tools.py pack WORK ARCHIVE [--max-file-bytes N] [--max-archive-bytes N]
      packs the folder WORK into the .tar.gz ARCHIVE (its members under ARCHIVE's stem, e.g.
      gpu-check-files/logs/build.log). Written to a hidden temporary name beside ARCHIVE, then
      renamed, so that a run killed while packing still leaves the previous archive. A file
      larger than --max-file-bytes keeps its beginning and its end, with a line that says how
      much was cut; when the archive still comes out larger than --max-archive-bytes, it is
      packed again with a smaller cut. Prints one line per cut file. Exit 0, or 1 when even
      the smallest cut does not fit.

  gpu_check_tools.py check-out DIR [--max-files 8] [--max-depth 2] [--gpu-check]
      checks that DIR holds what the lending tool brings back: the count, plain files only (no
      links, nothing else), the depth, the names, the sizes. With --gpu-check, also that it is
      a whole gpu-check output: no folders, summary.md and summary.json, and the archive with
      the log of every step that ran. Prints each problem; exit 0 when there is none, 1
      otherwise.

  gpu_check_tools.py size ROOT [--carry DIR]... [--limit-mib 64]
      how much the tree that travels comes to: git's tracked and untracked-but-not-ignored
      files of ROOT plus every carried folder. Prints the sizes; exit 0 when the total is within
      the limit, 1 when it is over, 2 when ROOT is not a git checkout.

  gpu_check_tools.py data-subset SOURCE DEST [--train N] [--test N]
      writes into DEST the first N training and test images and labels of the Fashion-MNIST IDX
      files in SOURCE (raw or .gz), as .gz IDX files (what bench/train runs on a lent GPU host:
      the whole set does not fit what travels). The files are read and checked with
      bench/train/torch_train.py's IDX reader. Prints what it wrote; exit 0, 1 when SOURCE is
      missing or a file is wrong.

  gpu_check_tools.py ctest-programs BUILD LABELS
      the names of the files in the build folder BUILD that the ctest entries of the labels
      LABELS (a regex, as ctest -L takes it) name on their command lines, the set-ups of the
      fixtures they require included (ctest --show-only=json-v1 -L LABELS, and their add_test
      lines in the CTestTestfile.cmake files: ctest leaves out the command of a test whose
      program is not built yet): one a line, sorted. Works on a configured build before it is
      built: gpu-check builds the targets of these names, so that no such entry fails as "Not
      Run". Exit 0, 1 when ctest fails.

  gpu_check_tools.py summary-json DATE HOST GPU QUICK SECONDS EXIT_CODE VERDICT [KEY=VALUE...]
      reads the steps as tab-separated lines (step, status, seconds, note) from stdin and prints
      gpu-check's summary.json; each KEY=VALUE becomes one more field (a string).
"""

import argparse
import gzip
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
from pathlib import Path

MIB = 1 << 20
NAME = re.compile(r"^[A-Za-z0-9._-]+$")
LIMIT_FILES = 8
LIMIT_FILE_BYTES = 16 * MIB
LIMIT_TOTAL_BYTES = 64 * MIB
ARCHIVE = "gpu-check-files.tar.gz"


def cut_text(data, keep):
    """@data shortened to @keep bytes or a little more: a quarter from its start, the rest from its
    end (where a failure's last words are), and a line between them saying what was cut."""
    head = keep // 4
    tail = keep - head
    cut = len(data) - head - tail
    note = (f"\n[... gpu-check cut {cut} bytes here to keep the archive small: the file had "
            f"{len(data)} bytes; its first {head} and last {tail} are kept ...]\n").encode()
    return data[:head] + note + data[-tail:]


def pack_once(work, archive, max_file_bytes):
    """The archive's bytes and the names of the files that were cut."""
    buffer = io.BytesIO()
    cut = []
    top = archive.name.split(".")[0]
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=6, mtime=0) as compressed:
        with tarfile.open(fileobj=compressed, mode="w") as tar:
            for path in sorted(p for p in work.rglob("*") if p.is_file() and not p.is_symlink()):
                relative = path.relative_to(work).as_posix()
                try:
                    data = path.read_bytes()
                except OSError:
                    continue  # vanished while packing (a step still writing): the next pack has it
                if len(data) > max_file_bytes:
                    data = cut_text(data, max_file_bytes)
                    cut.append(relative)
                info = tarfile.TarInfo(f"{top}/{relative}")
                info.size = len(data)
                info.mtime = int(path.stat().st_mtime)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue(), cut


def command_pack(args):
    work, archive = Path(args.work), Path(args.archive)
    limit = args.max_file_bytes
    while True:
        data, cut = pack_once(work, archive, limit)
        if len(data) <= args.max_archive_bytes:
            break
        if limit <= 64 * 1024:
            print(f"pack: {archive.name} is {len(data)} bytes even with every file cut to "
                  f"{limit} bytes", file=sys.stderr)
            return 1
        limit //= 4
    partial = archive.with_name(f".{archive.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, archive)
    for name in cut:
        print(f"cut {name} to about {limit} bytes")
    return 0


def layout_problems(folder, max_files=LIMIT_FILES, max_depth=2):
    """Every way @folder departs from what the lending tool brings back, as sentences."""
    problems = []
    files = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_symlink():
            problems.append(f"{relative} is a symbolic link (links do not come back)")
        elif path.is_dir():
            if len(relative.parts) > max_depth:
                problems.append(f"{relative} is a folder deeper than {max_depth} levels")
        elif not path.is_file():
            problems.append(f"{relative} is not a plain file")
        else:
            files.append(path)
            if len(relative.parts) > max_depth + 1:
                problems.append(f"{relative} is deeper than {max_depth} folders")
        if not all(NAME.match(part) for part in relative.parts):
            problems.append(f"{relative} has a name outside [A-Za-z0-9._-]")
    if len(files) > max_files:
        problems.append(f"{len(files)} files, more than {max_files}")
    total = 0
    for path in files:
        size = path.stat().st_size
        total += size
        if size > LIMIT_FILE_BYTES:
            problems.append(f"{path.relative_to(folder)} is {size / MIB:.1f} MiB, over 16 MiB")
    if total > LIMIT_TOTAL_BYTES:
        problems.append(f"{total / MIB:.1f} MiB in all, over 64 MiB")
    return problems


def gpu_check_problems(folder):
    """What a gpu-check output folder lacks: its summary, its archive, a step's log."""
    problems = [f"no {name}" for name in ("summary.md", "summary.json", ARCHIVE)
                if not (folder / name).is_file()]
    if problems:
        return problems
    steps = json.loads((folder / "summary.json").read_text())["steps"]
    with tarfile.open(folder / ARCHIVE) as archive:
        logs = {Path(name).name for name in archive.getnames() if "/logs/" in name}
    for step in steps:
        name, status = step["step"], step["status"]
        if status == "SKIP" or (status == "FAIL" and step["seconds"] == 0 and name != "preflight"):
            continue  # not run, so nothing logged (a SKIP that ran has its log too, not needed)
        wanted = f"{name}.log"
        if name.startswith("sanitizer-") and name != "sanitizer-probe":
            found = any(log.startswith(f"{name}-") for log in logs)  # one log per suite
        else:
            found = wanted in logs
        if not found:
            problems.append(f"the archive has no log of the step {name} ({status})")
    return problems


def command_check_out(args):
    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"{folder} is not a folder", file=sys.stderr)
        return 1
    problems = layout_problems(folder, args.max_files, 0 if args.gpu_check else args.max_depth)
    if args.gpu_check:
        problems += gpu_check_problems(folder)
    for problem in problems:
        print(f"check-out: {problem}", file=sys.stderr)
    count = sum(1 for p in folder.rglob("*") if p.is_file())
    if not problems:
        print(f"check-out: {folder} is fine: {count} plain files within the limits")
    return 1 if problems else 0


def tree_files(root):
    """The files of @root that travel: git's tracked files that exist, and the untracked ones
    that git does not ignore."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=False)
    if listed.returncode != 0:
        return None
    names = sorted({name for name in listed.stdout.decode().split("\0") if name})
    return [root / name for name in names if (root / name).is_file()]


def folder_bytes(folder):
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def command_size(args):
    root = Path(args.root).resolve()
    files = tree_files(root)
    if files is None:
        print(f"size: {root} is not a git checkout: cannot tell what travels", file=sys.stderr)
        return 2
    tree = sum(p.lstat().st_size for p in files)
    total = tree
    print(f"tree      {tree / MIB:8.1f} MiB  ({len(files)} files: git ls-files --cached --others "
          f"--exclude-standard)")
    for carry in args.carry:
        folder = Path(carry) if Path(carry).is_absolute() else root / carry
        size = folder_bytes(folder) if folder.is_dir() else 0
        total += size
        print(f"carry     {size / MIB:8.1f} MiB  ({carry}{'' if folder.is_dir() else ': not there'})")
    over = total > args.limit_mib * MIB
    print(f"total     {total / MIB:8.1f} MiB  of {args.limit_mib} MiB: "
          f"{'OVER THE LIMIT' if over else 'fits'}")
    return 1 if over else 0


def command_data_subset(args):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "train"))
    import torch_train  # noqa: PLC0415 (bench/train's IDX reader; no torch is imported)

    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for key, stem in torch_train.FILES.items():
        limit = args.train if key.startswith("train") else args.test
        try:
            dims, payload = torch_train.read_idx(torch_train.idx_path(args.source, stem), limit)
        except torch_train.DataError as error:
            print(f"data-subset: {error}", file=sys.stderr)
            return 1
        header = bytes([0, 0, 0x08, len(dims)]) + struct.pack(f">{len(dims)}I", *dims)
        target = dest / f"{stem}.gz"
        with gzip.open(target, "wb", compresslevel=6) as stream:
            stream.write(header + payload)
        print(f"{target}: {dims[0]} items, {target.stat().st_size / MIB:.1f} MiB")
    return 0


def command_unpack_data(args):
    """The four Fashion-MNIST IDX files of @args.source, uncompressed, in @args.dest (each under a
    temporary name, then renamed); a file already there and newer than its source is kept."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "train"))
    import torch_train  # noqa: PLC0415 (bench/train's IDX file names; no torch is imported)

    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for stem in torch_train.FILES.values():
        try:
            source = Path(torch_train.idx_path(args.source, stem))
        except torch_train.DataError as error:
            print(f"unpack-data: {error}", file=sys.stderr)
            return 1
        target = dest / stem
        if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
            print(f"{target}: kept")
            continue
        partial = dest / f".{stem}.partial"
        opener = gzip.open if source.name.endswith(".gz") else open
        with opener(source, "rb") as reading, open(partial, "wb") as writing:
            shutil.copyfileobj(reading, writing, 1 << 20)
        partial.replace(target)
        print(f"{target}: {target.stat().st_size / MIB:.1f} MiB from {source}")
    return 0


def command_stand_in_data(args):
    """A stand-in for Fashion-MNIST in @args.dest: the four .gz IDX files with @args.train and
    @args.test 28x28 images, each a band whose place is its label (0-9 in turn), so that they
    compress to almost nothing. For rehearsing the data's path where the data set is absent:
    its images are not clothes, and accuracies on them mean nothing."""
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for prefix, count in (("train", args.train), ("t10k", args.test)):
        labels = bytes(i % 10 for i in range(count))
        image = {label: bytes(255 if 2 * label <= row < 2 * label + 8 else 0
                              for row in range(28) for _ in range(28)) for label in range(10)}
        pixels = b"".join(image[label] for label in labels)
        for stem, dims, payload in ((f"{prefix}-images-idx3-ubyte", (count, 28, 28), pixels),
                                    (f"{prefix}-labels-idx1-ubyte", (count,), labels)):
            header = bytes([0, 0, 0x08, len(dims)]) + struct.pack(f">{len(dims)}I", *dims)
            with gzip.open(dest / f"{stem}.gz", "wb", compresslevel=6) as stream:
                stream.write(header + payload)
            print(f"{dest / stem}.gz: {count} items")
    return 0


def ctest_commands(build):
    """{test name: its add_test line's command and arguments, as text} of every CTestTestfile.cmake
    in @build: where ctest cannot resolve a test's program yet (not built), its JSON has no
    command, but the file has the path."""
    found = {}
    pattern = re.compile(r"^add_test\(\[(=*)\[(.*?)\]\1\] (.*)\)$")
    for testfile in build.rglob("CTestTestfile.cmake"):
        for line in testfile.read_text(errors="replace").splitlines():
            match = pattern.match(line)
            if match:
                found[match.group(2)] = match.group(3)
    return found


def command_ctest_programs(args):
    build = Path(args.build).resolve()
    shown = subprocess.run(["ctest", "--test-dir", str(build), "-L", args.labels, "--show-only=json-v1"],
                           capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        print(f"ctest-programs: ctest failed: {shown.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    commands = ctest_commands(build)
    names = set()
    inside = re.compile(re.escape(str(build)) + r"/[^\s=|;,\"']+")
    for test in json.loads(shown.stdout).get("tests", []):
        # A program is the command, or an argument such as -DPROGRAM=<path> or a driver's <path>.
        for text in [*(test.get("command") or []), commands.get(test["name"], "")]:
            names.update(Path(path).name for path in inside.findall(text))
    print("\n".join(sorted(names)))
    return 0


def command_summary_json(args):
    steps = []
    for line in sys.stdin:
        name, status, seconds, note = line.rstrip("\n").split("\t", 3)
        steps.append({"step": name, "status": status, "seconds": int(seconds), "note": note})
    summary = {"tool": "gpu-check", "date_utc": args.date, "host": args.host, "gpu": args.gpu,
               "quick": args.quick == "1", "seconds": int(args.seconds),
               "exit_code": int(args.exit_code) if args.exit_code else None,
               "verdict": args.verdict}
    for extra in args.extra:
        key, _, value = extra.partition("=")
        summary[key] = value
    summary["steps"] = steps
    print(json.dumps(summary, indent=2))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    pack = sub.add_parser("pack", help="pack a folder into a .tar.gz, cutting huge files")
    pack.add_argument("work")
    pack.add_argument("archive")
    pack.add_argument("--max-file-bytes", type=int, default=4 * MIB)
    pack.add_argument("--max-archive-bytes", type=int, default=15 * MIB)
    check = sub.add_parser("check-out", help="check a folder against the lending tool's rules")
    check.add_argument("dir")
    check.add_argument("--max-files", type=int, default=LIMIT_FILES)
    check.add_argument("--max-depth", type=int, default=2)
    check.add_argument("--gpu-check", action="store_true", help="a whole gpu-check output")
    size = sub.add_parser("size", help="how many MiB travel")
    size.add_argument("root")
    size.add_argument("--carry", action="append", default=[])
    size.add_argument("--limit-mib", type=int, default=64)
    subset = sub.add_parser("data-subset", help="the first images of Fashion-MNIST, as .gz IDX files")
    subset.add_argument("source")
    subset.add_argument("dest")
    subset.add_argument("--train", type=int, default=20000)
    subset.add_argument("--test", type=int, default=10000)
    unpack = sub.add_parser("unpack-data", help="Fashion-MNIST's IDX files, uncompressed")
    unpack.add_argument("source")
    unpack.add_argument("dest")
    stand_in = sub.add_parser("stand-in-data", help="a stand-in for Fashion-MNIST, for rehearsals")
    stand_in.add_argument("dest")
    stand_in.add_argument("--train", type=int, default=2000)
    stand_in.add_argument("--test", type=int, default=1000)
    programs = sub.add_parser("ctest-programs", help="the files of a build that ctest entries run")
    programs.add_argument("build")
    programs.add_argument("labels")
    summary = sub.add_parser("summary-json", help="gpu-check's summary.json")
    for field in ("date", "host", "gpu", "quick", "seconds", "exit_code", "verdict"):
        summary.add_argument(field)
    summary.add_argument("extra", nargs="*")
    args = parser.parse_args(argv)
    handlers = {"pack": command_pack, "check-out": command_check_out, "size": command_size,
                "summary-json": command_summary_json, "data-subset": command_data_subset,
                "ctest-programs": command_ctest_programs, "unpack-data": command_unpack_data,
                "stand-in-data": command_stand_in_data}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
