#!/usr/bin/env python3
"""PyTorch training with libdao as its CUDA allocator, against PyTorch's own.

    python3 scripts/gpu-torch.py MODE [resnet|gpt|graph|all] [--steps N]

MODE: ``native`` (PyTorch's allocator, as PYTORCH_CUDA_ALLOC_CONF says) or
``dao`` (``dao.torch.use()`` from bindings/python, libdao's default config or
DAO_ALLOC_CONF_CUDA). Each mode must run in a fresh process: the allocator is
chosen before the first CUDA allocation. scripts/gpu-check.sh runs it three
times (native, native with expandable_segments:True, dao) and prints the rows
side by side.

Prints one line per model: the median step time (the first two steps left
out: cuDNN autotuning and the allocator's warm-up) and the peak reserved and
allocated memory. Exits 0 after printing, 3 (with a line saying why) where
there is no PyTorch with CUDA, 1 on any other failure.

Models: ResNet-50 at batch 64 (torchvision, when installed) and a 12-layer,
1024-wide transformer at batch 8 whose sequence length is drawn from
256..1024 each step (the varying shapes make fragmentation show), both
trained with AdamW on random data. ``graph``: a CUDA graph captured with
torch.cuda.graph after a warm-up on a side stream, then replayed; prints
whether the capture worked and the replay matches an eager run (with a
pluggable allocator PyTorch gives the capture no private pool: the
allocations made during capture come from libdao's ordinary pools).
"""
import os
import random
import statistics
import sys
import time


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("native", "dao") or "-h" in args or "--help" in args:
        print(__doc__.strip(), file=sys.stderr if args and args[0] not in ("-h", "--help") else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 2
    mode = args[0]
    which = args[1] if len(args) > 1 and not args[1].startswith("--") else "all"
    steps = 12
    if "--steps" in args:
        steps = int(args[args.index("--steps") + 1])
    try:
        import torch
    except ImportError as e:
        print("gpu-torch: no PyTorch here (%s): skipped" % e)
        return 3
    if not torch.cuda.is_available():
        print("gpu-torch: PyTorch %s has no CUDA device here: skipped" % torch.__version__)
        return 3
    if mode == "dao":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "bindings", "python"))
        import dao.torch
        dao.torch.use()

    def peaks():
        if mode == "dao":
            s = dao.torch.memory_stats()
        else:
            s = torch.cuda.memory_stats()
        return s.get("reserved_bytes.all.peak", 0), s.get("allocated_bytes.all.peak", 0)

    label = mode
    if mode == "native":
        label += "/" + os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default")
    else:
        label += "/" + os.environ.get("DAO_ALLOC_CONF_CUDA", "default")

    def bench(name, model, make_batch, loss_fn, n):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        times = []
        for _ in range(n):
            x, y = make_batch()
            torch.cuda.synchronize()
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        reserved, allocated = peaks()
        print("gpu-torch: %-30s %-34s step_ms=%.2f peak_reserved_gib=%.3f peak_allocated_gib=%.3f"
              % (name, label, statistics.median(times[2:]) * 1e3, reserved / 2**30,
                 allocated / 2**30), flush=True)

    torch.manual_seed(0)
    random.seed(0)
    dev = "cuda"
    if which in ("all", "resnet"):
        try:
            import torchvision
        except ImportError:
            print("gpu-torch: resnet50 skipped: no torchvision")
        else:
            m = torchvision.models.resnet50().to(dev)
            bench("resnet50_bs64", m,
                  lambda: (torch.randn(64, 3, 224, 224, device=dev),
                           torch.randint(0, 1000, (64,), device=dev)),
                  torch.nn.functional.cross_entropy, steps)
            del m
    if which in ("all", "gpt"):
        class Transformer(torch.nn.Module):
            def __init__(self, vocab=32000, d=1024, layers=12, t_max=1024):
                super().__init__()
                self.emb = torch.nn.Embedding(vocab, d)
                self.pos = torch.nn.Parameter(torch.zeros(t_max, d))
                layer = torch.nn.TransformerEncoderLayer(d, 16, 4 * d, batch_first=True,
                                                         norm_first=True)
                self.blocks = torch.nn.TransformerEncoder(layer, layers)
                self.head = torch.nn.Linear(d, vocab)

            def forward(self, x):
                t = x.shape[1]
                mask = torch.nn.Transformer.generate_square_subsequent_mask(t, device=x.device)
                return self.head(self.blocks(self.emb(x) + self.pos[:t], mask=mask, is_causal=True))

        m = Transformer().to(dev)

        def batch():
            x = torch.randint(0, 32000, (8, random.choice([256, 512, 768, 1024])), device=dev)
            return x, x

        bench("transformer_12x1024_bs8_T256-1024", m, batch,
              lambda o, y: torch.nn.functional.cross_entropy(o.reshape(-1, o.shape[-1]),
                                                             y.reshape(-1)),
              steps + 4)
    if which in ("all", "graph"):
        lin = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                  torch.nn.Linear(4096, 1024)).to(dev)
        x = torch.randn(64, 1024, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                y = lin(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                y = lin(x)
            x.copy_(torch.randn(64, 1024, device=dev))
            graph.replay()
            torch.cuda.synchronize()
            same = torch.allclose(y, lin(x), rtol=1e-4, atol=1e-4)
            print("gpu-torch: %-30s %-34s captured=yes replay_matches=%s"
                  % ("cuda_graph_mlp_1024x4096", label, "yes" if same else "NO"), flush=True)
        except Exception as e:  # reported, not raised: the other rows still count
            print("gpu-torch: %-30s %-34s captured=no (%s: %s)"
                  % ("cuda_graph_mlp_1024x4096", label, type(e).__name__, e), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException as e:  # a failure is a line and status 1, not a traceback only
        print("gpu-torch: failed: %s: %s" % (type(e).__name__, e))
        raise SystemExit(1)
