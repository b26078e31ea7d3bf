"""AlphaStar network at the default (small) size: parameter counts and time per batch.

Prints the parameter count of each module, then the median wall time of
  * a sampling forward pass (actors: no gradient),
  * a teacher-forced forward + backward pass of the combined RL loss (learner),
on a batch of ``--batch`` games × ``--time`` steps with ``--units`` units on the field.

    .venv/bin/python benchmarks/alphastar_network.py [--batch 8 --time 16 --units 20 --repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from selfplay.agents.alphastar import AlphaStarConfig, AlphaStarNet
from selfplay.agents.alphastar.losses import RLLossConfig, alphastar_rl_loss, discounts_from_dones
from selfplay.agents.alphastar.synthetic import random_obs


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--time", type=int, default=16)
    parser.add_argument("--units", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    torch.manual_seed(0)
    config = AlphaStarConfig()
    net, sl_net = AlphaStarNet(config).to(device), AlphaStarNet(config).to(device)
    print(f"AlphaStar network, default (small) config on {device} ({torch.get_num_threads()} threads)")
    total = sum(p.numel() for p in net.parameters())
    print(f"  parameters: {total:,}")
    for name, module in net.named_children():
        print(f"    {name:<22} {sum(p.numel() for p in module.parameters()):>10,}")

    B, T = args.batch, args.time
    obs = random_obs(config, B, T, args.units, num_slots=args.units, seed=1)
    obs = type(obs)(**{k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in vars(obs).items()})
    gen = torch.Generator(device=device).manual_seed(2)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def sample():
        with torch.no_grad():
            out = net(obs, generator=gen)
        sync()
        return out

    actor = sample()
    with torch.no_grad():
        sl_logits = sl_net(obs, actions=actor.actions).time_major().logits
    behaviour = {h: v.transpose(0, 1) for h, v in actor.log_probs.items()}
    rewards = np.zeros((T, B), dtype=np.float32)
    rewards[-1] = 1.0
    discounts = torch.as_tensor(discounts_from_dones(np.zeros((T, B), dtype=np.float32))).to(device)
    rewards_t, bootstrap = torch.as_tensor(rewards).to(device), torch.zeros(B, device=device)

    def learn():
        net.zero_grad()
        target = net(obs, actions=actor.actions).time_major()
        loss = alphastar_rl_loss(target, behaviour, sl_logits, rewards_t, discounts, bootstrap, config=RLLossConfig())
        loss["total"].backward()
        sync()

    t_sample = _median_time(sample, args.repeats)
    t_learn = _median_time(learn, args.repeats)
    steps = B * T
    print(f"  batch: {B} games × {T} steps = {steps} steps, {args.units} units")
    print(f"  sampling forward:          {t_sample * 1e3:8.1f} ms/batch  ({steps / t_sample:8.0f} steps/s)")
    print(f"  teacher-forced fwd + bwd:  {t_learn * 1e3:8.1f} ms/batch  ({steps / t_learn:8.0f} steps/s)")


if __name__ == "__main__":
    main()
