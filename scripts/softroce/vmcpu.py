"""The VM's CPU model, which decides the guest's clocksource (docs/softroce-rig.md,
"The guest's clock and CPU model")."""

from __future__ import annotations


def host_cpuinfo() -> tuple[str, set[str]]:
    """(vendor_id, flags) of the host's first CPU, ("", set()) if unknown."""
    vendor, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for ln in f:
                key, _, val = ln.partition(":")
                key = key.strip()
                if key == "vendor_id" and not vendor:
                    vendor = val.strip()
                elif key == "flags" and not flags:
                    flags = set(val.split())
                if vendor and flags:
                    break
    except OSError:
        pass
    return vendor, flags


def guest_cpu(args) -> str | None:
    """The qemu -cpu model for the guest, None for virtme-ng's default ("max").

    Under software emulation (TCG) the guest's rdtsc reads the host's TSC.  With
    the default model the guest claims a CPU vendor for which Linux assumes
    unsynchronised TSCs, so it falls back to the emulated HPET and every
    clock_gettime() becomes a system call plus an emulated register read (about
    1 us), which would sit inside every latency sample.  On an Intel host whose
    TSC is invariant we give the guest the host's vendor, so the guest kernel
    treats its TSC like the host's: clocksource tsc, checked at run time by the
    kernel's clocksource watchdog against the HPET, and clock_gettime() through
    the vDSO, as on real hardware.  docs/softroce-rig.md, "The guest's clock".
    """
    spec = args.guest_cpu
    if spec != "auto":
        return None if spec == "default" else spec
    if args.kvm:
        return None
    vendor, flags = host_cpuinfo()
    if vendor == "GenuineIntel" and {"constant_tsc", "nonstop_tsc"} <= flags:
        return "max,vendor=GenuineIntel"
    return None
