"""A hand-written self-play loop over the core API — PSRO with the ready evaluator — single file.

    python examples/core_loop_psro.py --episodes 3000

No session, no adapter: the loop is Algorithm 1 of the paper written out with the core objects
(``Menagerie``, ``Payoff``, a scheme from ``make_scheme``). Ω is ``scheme.sample``, G is
``scheme.curate``; PSRO's meta-game is filled by ``MatchEvaluator``, which plays each new entry
against every entry with the suite's batched ``play_matches`` and returns the new entry's win rates.
The learner is a linear softmax policy trained by REINFORCE every ``--batch-episodes`` games; it is
frozen at most once per weight version, and only when G asks for a snapshot. At the end the
population is measured with the analysis helpers (``round_robin_pairs``/``play_matches`` →
winrate matrix → maximum-entropy Nash).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from selfplay.analysis.nash import maxent_nash
from selfplay.envs.rps import RirRPS

from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import LearnerInfo, make_scheme
from selfplay.training.adapters import MatchEvaluator
from selfplay.training.matches import play_matches, round_robin_pairs, winrate_from_pair_scores


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheme", default="psro:window=50,threshold=0.72,matches_per_pair=20,max_episodes_per_iteration=400")
    p.add_argument("--episodes", type=int, default=3000, help="games to play (the budget)")
    p.add_argument("--batch-episodes", type=int, default=16, help="games per REINFORCE update")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--eval-matches", type=int, default=20, help="matches per pair in the final population measure")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=1, help="small networks run fastest on one thread")
    return p.parse_args(argv)


class LinearPolicy:
    """Softmax over a linear map of the observation; speaks the suite's policy protocol
    (``initial_state(batch)``, ``act(obs, state, mask, episode_start) -> (actions, state, info)``)."""

    def __init__(self, obs_size: int, n_actions: int, weight: torch.Tensor | None = None):
        self.weight = torch.zeros(obs_size + 1, n_actions) if weight is None else weight

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return obs @ self.weight[:-1] + self.weight[-1]

    def initial_state(self, batch: int):
        return None

    def act(self, obs, state=None, mask=None, episode_start=None):
        dist = torch.distributions.Categorical(logits=self.logits(torch.as_tensor(obs, dtype=torch.float32)))
        return dist.sample(), None, {}

    def freeze(self) -> LinearPolicy:
        return LinearPolicy(0, 0, self.weight.detach().clone())


@dataclass
class Result:
    menagerie: Menagerie
    payoff: Payoff
    scheme: object
    records: list = field(default_factory=list)  # (episode, opponent id drawn, learner's score)
    freezes: int = 0
    W: np.ndarray | None = None
    nash: np.ndarray | None = None
    seconds: float = 0.0


def play(game: RirRPS, learner: LinearPolicy, opponent, seat: int):
    """One game; the learner's log-probabilities, its return and its score (1 win, ½ draw, 0 loss)."""
    obs = game.reset()
    logps, ret = [], 0.0
    while True:
        dist = torch.distributions.Categorical(logits=learner.logits(obs[seat]))
        a = dist.sample()
        logps.append(dist.log_prob(a))
        with torch.no_grad():
            b, _, _ = opponent.act(obs[1 - seat], None)
        obs, rewards, done, info = game.step([a, b] if seat == 0 else [b, a])
        ret += float(rewards[seat][0])
        if bool(done[0]):
            score = 0.5 if bool(info["draw"][0]) else float(int(info["winner"][0]) == seat)
            return torch.stack(logps).sum(), ret, score


def main(argv=None) -> Result:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)  # this script is the application: its choice
    torch.manual_seed(args.seed)
    scheme = make_scheme(args.scheme, evaluate=MatchEvaluator("rirrps", seed=args.seed))  # PSRO needs it here
    menagerie, payoff, rng = Menagerie(), Payoff(), np.random.default_rng(args.seed)
    game = RirRPS(1, seed=args.seed)
    learner = LinearPolicy(game.obs_size, game.n_actions)
    learner.weight.requires_grad_(True)
    optimizer = torch.optim.Adam([learner.weight], lr=args.lr)
    result = Result(menagerie, payoff, scheme)

    version, frozen, frozen_version = 0, learner.freeze(), 0
    menagerie.add(frozen, step=0, player="learner", episode=0, weight_version=0)  # menagerie_0 = {π}

    def snapshot():  # one frozen copy per weight version, made only when G asks for one
        nonlocal frozen, frozen_version
        if frozen_version != version:
            frozen, frozen_version = learner.freeze(), version
            result.freezes += 1
        return frozen

    start, batch, steps = time.perf_counter(), [], 0
    for episode in range(args.episodes):
        opponent = scheme.sample(menagerie, payoff, rng)  # Ω
        seat = int(rng.integers(2))
        logp, ret, score = play(game, learner, opponent.policy, seat)
        steps += game.episode_length
        payoff.update("learner", opponent.id, score)
        result.records.append((episode, opponent.id, score))
        batch.append((logp, ret))
        if len(batch) == args.batch_episodes:  # REINFORCE with a mean baseline
            returns = torch.tensor([r for _, r in batch])
            loss = -(torch.stack([lp for lp, _ in batch]) * (returns - returns.mean())).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batch, version = [], version + 1
        info = LearnerInfo(name="learner", episode=episode + 1, step=steps, weight_version=version, snapshot=snapshot)
        scheme.curate(menagerie, info, payoff, outcome=score)  # G

    # measure the population: every distinct frozen policy against every other, both seats
    policies = list({id(e.policy): e.policy for e in menagerie}.values())
    if len(policies) > 1:
        pairs = round_robin_pairs(len(policies))
        scores = play_matches("rirrps", policies, pairs, args.eval_matches, seed=args.seed + 1)
        result.W, _ = winrate_from_pair_scores(len(policies), pairs, scores)
        result.nash = maxent_nash(result.W - 0.5)
    result.seconds = time.perf_counter() - start
    return result


if __name__ == "__main__":
    res = main()
    print(f"{len(res.records)} games in {res.seconds:.1f}s; PSRO iterations {res.scheme.iterations}; "
          f"menagerie {len(res.menagerie)} entries ({res.freezes} frozen copies)")
    if res.nash is not None:
        print("maxent Nash of the population's winrate game:", np.round(res.nash, 3))
