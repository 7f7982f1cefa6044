"""Boot the page colouring test kernel under QEMU (TCG) and read its programs.

The kernel measurements run the selftest programs of kernel-patch/ in a
guest: kernel-patch/Makefile builds the kernel and an initramfs naming the
programs, kernel-patch/scripts/boot-test.sh boots it and judges the console
(TAP, dmesg, the sentinel), and this module splits the serial log into the
programs' output (between the guest's "=== PCTEST RUN" and "RESULT" lines).
"""
import dataclasses
import re
import subprocess

from ..paths import ROOT

KERNEL_PATCH = ROOT / "kernel-patch"
BUILD = KERNEL_PATCH / "build"
KERNEL = BUILD / "test" / "bzImage"
# test.config with the irqs-off latency tracer (`make -C kernel-patch kernel-trace`)
TRACE_KERNEL = BUILD / "trace" / "bzImage"

# The guest boot-test.sh boots, for a page's header.
GUEST = ("Guest: the patched test kernel (`make -C kernel-patch kernel`) under QEMU TCG "
         "(`-cpu qemu64,l3-cache=on -m 1024 -smp 2`: two vCPUs, the guest brings up both)")

BEGIN = re.compile(r"=== PCTEST BEGIN (\S+)")
RUN = re.compile(r"^=== PCTEST RUN (\S+)")
RESULT = re.compile(r"^=== PCTEST RESULT (\S+) rc=(-?\d+) (\S+)")
TAP = re.compile(r"^(not ok|ok) \d+ - (.*)")


@dataclasses.dataclass
class Program:
    name: str
    lines: list                 # everything it printed, without the markers
    result: str = "no RESULT line (the guest died or timed out)"

    def ok(self):
        return [m.group(2) for m in map(TAP.match, self.lines) if m and m.group(1) == "ok"]

    def not_ok(self):
        return [m.group(2) for m in map(TAP.match, self.lines) if m and m.group(1) == "not ok"]

    def diag(self, prefix):
        """The '# PREFIX...' lines, without the '# '."""
        return [x[2:] for x in self.lines if x.startswith("# " + prefix)]

    def tap(self):
        """'7 of 7 ok' (or which failed)."""
        ok, bad = self.ok(), self.not_ok()
        text = f"{len(ok)} of {len(ok) + len(bad)} ok"
        return text + ("; not ok: " + "; ".join(bad) if bad else "")


@dataclasses.dataclass
class Boot:
    rc: int                     # boot-test.sh's verdict: 0 pass
    log: str                    # the serial log's path
    programs: dict              # name -> Program
    release: str = ""           # the guest's uname -r ("" if it never got that far)


def parse(text):
    """Programs by name from a serial log's text."""
    programs, cur = {}, None
    for line in text.replace("\r", "").splitlines():
        if m := RUN.match(line):
            cur = programs[m.group(1)] = Program(m.group(1), [])
        elif m := RESULT.match(line):
            if m.group(1) in programs:
                programs[m.group(1)].result = f"{m.group(3)} (rc {m.group(2)})"
            cur = None
        elif cur is not None:
            cur.lines.append(line)
    return programs


def release(text):
    """The guest kernel's release from a serial log's text (mkinitramfs.sh's
    "=== PCTEST BEGIN <uname -r>"), "" when the guest never printed it."""
    m = BEGIN.search(text)
    return m.group(1) if m else ""


def build(initramfs_target, kernel_target="kernel"):
    """A kernel and the initramfs (kernel-patch/Makefile targets: kernel,
    the test kernel, or kernel-trace)."""
    subprocess.run(["make", "-s", "-C", str(KERNEL_PATCH), kernel_target, initramfs_target], check=True)
    return BUILD / f"{initramfs_target}.cpio.gz"


def boot(initramfs, log, append="", timeout=1200, kernel=KERNEL):
    """One boot of the test kernel (or @kernel); the programs' output and the verdict."""
    cmd = [str(KERNEL_PATCH / "scripts" / "boot-test.sh"), "-k", str(kernel), "-i", str(initramfs),
           "-o", str(log), "-e", "supported", "-t", str(timeout)]
    if append:
        cmd += ["-a", append]
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False).returncode
    try:
        with open(log, errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    return Boot(rc, str(log), parse(text), release(text))


def guarded_boots(guard, initramfs, n, log_prefix, append="", say=print, kernel=KERNEL):
    """n boots, each one configuration of the quiet-machine guard; logs
    build/LOG_PREFIX-I.log."""
    boots = []
    for i in range(1, n + 1):
        with guard.measuring(f"boot {i}"):
            b = boot(initramfs, BUILD / f"{log_prefix}-{i}.log", append=append, kernel=kernel)
        say(f"boot {i}: boot-test.sh exit {b.rc}")
        boots.append(b)
    return boots


def release_line(boots):
    """A page's line naming the kernel release(s) the guests booted."""
    seen = sorted({b.release for b in boots if b.release})
    return "Guest kernel release (uname -r in the guest): " + (", ".join(seen) or "not in the logs") + "\n"


def log_name(b):
    """A boot's log, relative to the checkout."""
    return "`" + b.log.replace(str(ROOT) + "/", "") + "`"
