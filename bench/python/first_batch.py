"""Time to first batch of spool.torch.StreamingDataset (0 workers, batch 32,
no shuffle) from the S3 server of AWS_ENDPOINT_URL, each measurement in a
fresh process after its imports, over peers_bench's default datasets (2,000 x
100 KB and 50,000 x 1 KB, 8 shards each). Medians with min-max.

  first_batch.py prepare                 writes both under s3://spool-test/fb
  first_batch.py measure ROUNDS"""
import os
import subprocess
import sys
PREFIX = "s3://spool-test/fb"
SETS = {"big": (2000, 100_000, 8), "small": (50_000, 1_000, 8)}

def prepare():
    import spool
    for name, (n, size, shards) in SETS.items():
        with spool.ShardedWriter(f"{PREFIX}/{name}/data", shards) as w:
            for i in range(n):
                w.write(os.urandom(16) + bytes(size - 16))
    print("prepared")

CHILD = r'''
import time, sys
import torch, spool.torch
start = time.monotonic()
ds = spool.torch.StreamingDataset(sys.argv[1], batch_size=32, shuffle=False)
it = iter(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
next(it)
first = time.monotonic() - start
n = 1
for b in it: n += 1
print(first, time.monotonic() - start)
'''

def measure(rounds):
    res = {k: [] for k in SETS}
    for r in range(rounds):
        for name in SETS:
            out = subprocess.run([sys.executable, "-c", CHILD, f"{PREFIX}/{name}/data.manifest.json"],
                                 capture_output=True, text=True, check=True).stdout.split()
            res[name].append((float(out[0]), float(out[1])))
    for name, v in res.items():
        firsts = sorted(x[0] for x in v); totals = sorted(x[1] for x in v)
        print(f"{name}: first batch median {firsts[len(firsts)//2]*1000:.0f} ms (min {firsts[0]*1000:.0f}, max {firsts[-1]*1000:.0f}); whole median {totals[len(totals)//2]:.2f} s")

if __name__ == "__main__":
    prepare() if sys.argv[1] == "prepare" else measure(int(sys.argv[2]))
