"""The main job's task in Python, as task/fmnist/model.cc has it
in C++: a model pretrained on clean Fashion-MNIST images, adapted to
degraded ones (fog-like blur plus noise, deterministic per seed), each robot
on its own shard. The models have the C++ robot's tensors, names and order,
so Python and C++ robots train one model on one rogd; the pretrained model
is the C++ robot's cached file when there is one (tools/run.sh makes it),
so both start from the same weights."""

import gzip
import os
import struct

import torch
import torch.nn.functional as F

SIDE = 28


class Net(torch.nn.Module):
    """`cnn` (82 KB fp32, 8 tensors) or `convmlp` (3.2 MB fp32, 1,568 rows):
    task/fmnist/model.cc's NetImpl, tensor for tensor."""

    def __init__(self, convmlp):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 5)
        self.conv2 = torch.nn.Conv2d(8, 16, 5)
        if convmlp:
            self.fc1 = torch.nn.Linear(256, 1024)
            self.fc2 = torch.nn.Linear(1024, 512)
            self.fc3 = torch.nn.Linear(512, 10)
        else:
            self.fc1 = torch.nn.Linear(256, 64)
            self.fc2 = torch.nn.Linear(64, 10)
            self.fc3 = None

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.view(-1, 256)))
        if self.fc3 is not None:
            x = self.fc3(F.relu(self.fc2(x)))
        else:
            x = self.fc2(x)
        return F.log_softmax(x, 1)


def load(data_dir, prefix):
    """(images N x 1 x 28 x 28 in [0, 1], labels N int64) of the idx files
    `prefix` ("train", "t10k") in `data_dir` (Debian's dataset-fashion-mnist)."""
    ipath = os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz")
    lpath = os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")
    try:
        with gzip.open(ipath) as f:
            img = f.read()
        with gzip.open(lpath) as f:
            lab = f.read()
    except OSError as e:
        raise SystemExit(f"fmnist: cannot read {ipath} and {lpath} ({e}); install Debian's "
                         "dataset-fashion-mnist, or pass --data_dir")
    if struct.unpack(">I", img[:4])[0] != 2051 or struct.unpack(">I", lab[:4])[0] != 2049:
        raise SystemExit(f"fmnist: {ipath} or {lpath} is not an idx file")
    n = struct.unpack(">I", img[4:8])[0]
    if len(img) != 16 + n * SIDE * SIDE or len(lab) != 8 + n:
        raise SystemExit(f"fmnist: {ipath} is truncated")
    images = torch.frombuffer(bytearray(img[16:]), dtype=torch.uint8)
    images = images.view(n, 1, SIDE, SIDE).to(torch.float32).div(255)
    labels = torch.frombuffer(bytearray(lab[8:]), dtype=torch.uint8).to(torch.int64)
    return images, labels


def degrade(images, seed):
    """Fog-like blur plus noise, as the C++ robot's Degrade (the same torch
    operations on the same generator)."""
    with torch.no_grad():
        blurred = F.avg_pool2d(images, 5, 1, 2, ceil_mode=False, count_include_pad=False)
        gen = torch.Generator().manual_seed(seed * 7919 + 17)
        noise = torch.normal(0.0, 0.2, images.shape, generator=gen)
        return (0.55 * blurred + 0.35 + noise).clamp(0, 1)


def accuracy(net, images, labels):
    with torch.no_grad():
        was = net.training
        net.eval()
        correct = 0
        for at in range(0, images.shape[0], 500):
            out = net(images[at:at + 500])
            correct += int(out.argmax(1).eq(labels[at:at + 500]).sum())
        net.train(was)
    return correct / images.shape[0]


def cached_model_path(cache_dir, model, steps, seed, python=False):
    """The C++ robot's cache file name (task/fmnist/model.cc), or this robot's own
    when it pretrains in Python (another file: another format)."""
    name = f"fmnist-clean-{'' if model == 'cnn' else model + '-'}{steps}-seed{seed}"
    return os.path.join(cache_dir, name + (".py.pt" if python else ".pt"))


def pretrained(net, model, seed, steps, cache_dir, train, test):
    """Loads the pretrained clean model: the C++ robot's cache (a
    torch::save archive), else this robot's own, else pretrains it here
    (clean-image SGD, momentum 0.9) and caches it."""
    cpp = cached_model_path(cache_dir, model, steps, seed)
    own = cached_model_path(cache_dir, model, steps, seed, python=True)
    with torch.no_grad():
        if os.path.exists(cpp):
            saved = dict(torch.jit.load(cpp).named_parameters())
            for name, p in net.named_parameters():
                p.copy_(saved[name])
            return cpp
        if os.path.exists(own):
            net.load_state_dict(torch.load(own))
            return own
    torch.manual_seed(seed)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    images, labels = train
    for _ in range(steps):
        idx = torch.randint(0, images.shape[0], (64,), generator=gen)
        opt.zero_grad()
        F.nll_loss(net(images[idx]), labels[idx]).backward()
        opt.step()
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{own}.tmp{os.getpid()}"
    torch.save(net.state_dict(), tmp)
    os.replace(tmp, own)
    print(f"pretrained clean model: {own} (clean test accuracy "
          f"{accuracy(net, test[0][:2000], test[1][:2000]):.3f})", flush=True)
    return own


def degraded_shard(train, shard, shards, seed, non_iid):
    images, labels = train
    n = images.shape[0]
    if non_iid:
        order = torch.sort(labels, stable=True).indices
        mine = order[n * shard // shards:n * (shard + 1) // shards]
    else:
        mine = torch.arange(shard, n, shards)
    return degrade(images[mine], seed + shard), labels[mine]


def degraded_test(test, seed, eval_images):
    images, labels = test
    n = min(eval_images, images.shape[0])
    return degrade(images[:n], seed + 1000), labels[:n]
