"""nodeprov GPU smoke test, PyTorch part: prints exactly one JSON object.

Config arrives as a JSON object in argv[1], e.g. {"alloc_gib": 8.0}. Each
check catches its own exceptions, so one broken feature cannot hide the
others; Python 3.6+ and any recent PyTorch are enough.
"""
import json
import sys
import time


def main():
    cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    out = {"torch": None, "results": []}
    try:
        import torch
    except Exception as e:  # a broken install raises more than ImportError
        out["error"] = describe(e)
        emit(out)
        return
    started = time.perf_counter()
    out["torch"] = torch.__version__
    out["cuda_runtime"] = torch.version.cuda
    out["cuda_available"] = bool(torch.cuda.is_available())
    count = torch.cuda.device_count() if out["cuda_available"] else 0
    out["device_count"] = count
    out["devices"] = [device_info(torch, i) for i in range(count)]
    for i in range(count):
        dev = torch.device("cuda", i)
        run(out, "matmul_accuracy", i, matmul_accuracy, torch, dev)
        run(out, "alloc", i, alloc, torch, dev, float(cfg.get("alloc_gib", 8.0)))
        run(out, "d2d_bandwidth", i, d2d_bandwidth, torch, dev)
        run(out, "bf16_throughput", i, bf16_throughput, torch, dev)
    if count:
        run(out, "amp_step", 0, amp_step, torch, torch.device("cuda", 0))
    out["elapsed_s"] = round(time.perf_counter() - started, 2)
    emit(out)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")


def describe(e):
    return "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")


def device_info(torch, i):
    p = torch.cuda.get_device_properties(i)
    return {
        "index": i,
        "name": p.name,
        "cc": "%d.%d" % (p.major, p.minor),
        "mem_gib": round(p.total_memory / 2**30, 1),
    }


def run(out, name, device, fn, *args):
    rec = {"check": name, "device": device}
    t = time.perf_counter()
    try:
        rec.update(fn(*args))
    except Exception as e:
        rec["error"] = describe(e)
    rec["ms"] = int((time.perf_counter() - t) * 1000)
    out["results"].append(rec)


def matmul_accuracy(torch, dev):
    # An fp64 product is the reference; the error includes input rounding,
    # which is what a training job sees too.
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device=dev, dtype=torch.float64)
    b = torch.randn(1024, 1024, device=dev, dtype=torch.float64)
    ref = a @ b
    errs = {}
    for name, dt in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
        c = (a.to(dt) @ b.to(dt)).double()
        errs[name] = float((c - ref).norm() / ref.norm())
    torch.cuda.synchronize(dev)
    return {"relerr": errs}


def alloc(torch, dev, gib):
    x = torch.empty(int(gib * 2**30), dtype=torch.uint8, device=dev)
    x.fill_(0x5A)
    # Sampling every MiB plus the last byte catches a mapping that is not backed.
    ok = bool((x[:: 1 << 20] == 0x5A).all().item()) and int(x[-1].item()) == 0x5A
    del x
    torch.cuda.empty_cache()
    if not ok:
        raise RuntimeError("allocated memory read back wrong values")
    return {"gib": gib}


def d2d_bandwidth(torch, dev):
    src = torch.ones(256 * 2**20, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize(dev)
    iters = 10
    t = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src)
    torch.cuda.synchronize(dev)
    secs = time.perf_counter() - t
    # Each copy reads and writes the buffer once.
    moved = 2 * src.numel() * src.element_size() * iters
    return {"gb_per_s": round(moved / secs / 1e9, 1)}


def bf16_throughput(torch, dev):
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    # Warm-up lets clocks ramp and cuBLAS pick its kernel before timing.
    for _ in range(5):
        a @ b
    torch.cuda.synchronize(dev)
    iters = 50
    t = time.perf_counter()
    for _ in range(iters):
        a @ b
    torch.cuda.synchronize(dev)
    secs = time.perf_counter() - t
    return {"tflops": round(2 * n**3 * iters / secs / 1e12, 1)}


def grad_scaler(torch):
    try:
        return torch.amp.GradScaler("cuda")
    except (AttributeError, TypeError):  # before PyTorch 2.3
        return torch.cuda.amp.GradScaler()


def amp_step(torch, dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).to(dev)
    x = torch.randn(512, 256, device=dev)
    y = torch.randint(0, 10, (512,), device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = grad_scaler(torch)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.item()))
    return {"loss_first": losses[0], "loss_last": losses[-1]}


if __name__ == "__main__":
    main()
