"""Every random stream of a run comes from ``derive_seed`` with a named stream: no two runs of a
multi-seed comparison share a learner's, environment's or sampler's seed, and library code never
touches torch's (or numpy's) global generator."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from selfplay.utils.seeding import Stream, derive_seed

SEEDS = (0, 1, 2)


def test_derive_seed_is_stable_named_and_in_range():
    # BLAKE2b-64 of "i:0|s:learner|i:1" (little-endian), shifted to 63 bits: the same on every machine and process
    digest = hashlib.blake2b(b"i:0|s:learner|i:1", digest_size=8).digest()
    assert derive_seed(0, Stream.LEARNER, 1) == int.from_bytes(digest, "little") >> 1 == 8240136057777923426
    assert derive_seed(0, "learner", 1) == derive_seed(0, Stream.LEARNER, 1)
    assert derive_seed(0, Stream.LEARNER, 1) != derive_seed(1, Stream.LEARNER, 0)  # seed + index would collide
    assert derive_seed(0, Stream.LEARNER, 1) != derive_seed(0, Stream.ENV, 1) != derive_seed(0, Stream.ENV, 1, 0)
    values = {derive_seed(s, stream, *ix) for s in range(5) for stream in Stream for ix in [(), (0,), (1,), (0, 1)]}
    assert len(values) == 5 * len(Stream) * 4
    assert all(0 <= v < 2**63 for v in values)
    with pytest.raises(ValueError, match="stream must be a Stream"):
        derive_seed(0, 7)
    with pytest.raises(ValueError, match="seed must be an integer"):
        derive_seed(0.5, Stream.ENV)


@pytest.fixture
def env_seeds(monkeypatch):
    """Records the seed of every training environment the trainers make."""
    import selfplay.training.league_loop as league_loop
    import selfplay.training.loop as loop
    import selfplay.training.registry as registry
    import selfplay.training.two_sided as two_sided

    seen: list[int] = []
    make_env = registry.make_env

    def spy(name, num_envs, seed=None, **kw):
        seen.append(seed)
        return make_env(name, num_envs, seed=seed, **kw)

    for module in (loop, two_sided, league_loop, registry):
        monkeypatch.setattr(module, "make_env", spy)
    return seen


def test_runs_of_a_multi_seed_comparison_share_no_learner_env_or_sampler_seed(env_seeds, tmp_path):
    """Per kind of run — train, two-sided, league, Ray league (its workers' environments and samplers,
    its learner actors) — over seeds 0, 1, 2: every learner, environment and sampler of every run has
    its own seed. (Runs of different schemes with the same seed do start alike: paired comparisons.)"""
    from selfplay.training.distributed.league import LeagueLearner, RolloutWorker
    from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer
    from selfplay.training.loop import SelfPlayTrainer, TrainConfig
    from selfplay.training.two_sided import TwoSidedTrainer

    settings = {"horizon": 64, "minibatch_size": 16}
    streams: dict[str, list] = {"train": [], "two-sided": [], "league": [], "ray league": []}

    def record(kind: str, trainer) -> None:
        streams[kind] += [("learner", p.learner.seed) for p in trainer.players]
        streams[kind] += [("env", e) for e in env_seeds]
        streams[kind].append(("sampler", trainer.rng.bit_generator.seed_seq.entropy))
        env_seeds.clear()

    for s in SEEDS:
        record("train", SelfPlayTrainer(TrainConfig(seed=s, num_envs=4, agent_settings=settings), tmp_path / f"t{s}"))
        record("two-sided", TwoSidedTrainer(TrainConfig(env="smac:2m_vs_1z", seed=s, num_envs=2, agent_settings=settings),
                                            tmp_path / f"s{s}"))
        config = LeagueTrainConfig(seed=s, num_envs=4, agent_settings=settings)
        league = LeagueTrainer(config, tmp_path / f"l{s}")
        streams["league"].append(("starting policy", league.sl_policy.seed))
        record("league", league)
        # a Ray league: the coordinator holds a LeagueTrainer as above; the rollout workers play in their
        # own environments with their own samplers; the learner actors start as the league's players
        for w in range(2):
            worker = RolloutWorker(config, w, coordinator=None, learners={})
            for i, p in enumerate(league.players):
                worker.make_player(p.name, i)
                assert worker.local[p.name].seed == p.learner.seed
            streams["ray league"] += [("env", e) for e in env_seeds]
            streams["ray league"].append(("sampler", worker.rng.bit_generator.seed_seq.entropy))
            env_seeds.clear()
        for i, p in enumerate(league.players):
            assert LeagueLearner(config, i).learner.seed == p.learner.seed
        env_seeds.clear()  # the learner actors' environments (seed 0) give shapes only and play no game
        streams["ray league"] += streams["league"][-(2 * len(league.players) + 2):]
    sizes = {"train": 3, "two-sided": 2 * 2 + 1, "league": 1 + 4 * 2 + 1, "ray league": 2 * (4 + 1) + 4 * 2 + 2}
    for kind, values in streams.items():
        assert len(values) == len(SEEDS) * sizes[kind], kind
        assert None not in [v for _, v in values], kind
        seeds = [v for _, v in values]
        shared = {v: [k for k, w in values if w == v] for v in seeds if seeds.count(v) > 1}
        assert not shared, f"{kind}: streams share a seed: {shared}"


def test_rpp_games_of_a_comparison_have_distinct_seeds():
    from types import SimpleNamespace

    from selfplay.evaluation.seed_stats import rpp_tasks

    runs = [SimpleNamespace(agent="ppo-mlp", scheme=x, seed=s, path=f"{x}-{s}") for x in "abc" for s in SEEDS]
    tasks = rpp_tasks(SimpleNamespace(env="rirrps", matches=2), runs, "ppo-mlp")
    seeds = [t[4][-1] for t in tasks]
    assert len(tasks) == 3 * 9 and len(set(seeds)) == len(seeds)
    one = rpp_tasks(SimpleNamespace(env="rirrps", matches=2), [r for r in runs if r.seed == 1], "ppo-mlp")
    same = {(t[0], t[2]): t[4][-1] for t in tasks if t[1] == t[3] == 1}
    assert {(t[0], t[2]): t[4][-1] for t in one} == same  # a same-seed game does not depend on the other seeds


def test_rpp_games_of_a_pair_do_not_depend_on_the_other_schemes_or_their_order():
    """A pair's cross-population games (who plays the rows, paths and seed) are the same whatever the
    other schemes compared and the order of ``--schemes``: the same runs give the same RPP."""
    from types import SimpleNamespace

    from selfplay.evaluation.seed_stats import rpp_tasks

    def games(schemes):
        runs = [SimpleNamespace(agent="ppo-mlp", scheme=x, seed=s, path=f"{x}-{s}") for x in schemes for s in SEEDS]
        return {(t[0], t[1], t[2], t[3]): t[4] for t in rpp_tasks(SimpleNamespace(env="rirrps", matches=2), runs,
                                                                     "ppo-mlp")}

    pair = games(["naive", "psro"])
    assert all(x == "naive" and y == "psro" for x, _, y, _ in pair)  # the name that sorts first plays the rows
    assert games(["psro", "naive"]) == pair
    more = games(["psro", "delta-uniform", "naive"])
    assert {k: v for k, v in more.items() if {k[0], k[2]} == {"naive", "psro"}} == pair


def test_library_code_leaves_torchs_and_numpys_global_generators_alone(tmp_path):
    """A short run, the league's setup, an AlphaStar learner built without an SL checkpoint and a SMAC
    engine given no seed: the global generators' states are unchanged afterwards."""
    from selfplay.envs.smac import SMACBattle

    from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer
    from selfplay.training.loop import TrainConfig, train
    from selfplay.training.registry import agent_kit, make_env

    torch.manual_seed(1234)
    np.random.seed(1234)
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()
    train(TrainConfig(episodes=16, num_envs=8, checkpoints=2, tensorboard=False,
                      agent_settings={"horizon": 16, "minibatch_size": 16}), tmp_path / "run")
    LeagueTrainer(LeagueTrainConfig(num_envs=2, tensorboard=False), tmp_path / "league")
    SMACBattle("3m", 1, two_player=True)  # no seed: a fresh one from the operating system, not torch's
    env = make_env("smac-commander:3m", 1, seed=0)
    agent_kit("alphastar", "smac:3m").make_learner(env, 5)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_state))


def test_alphastar_networks_depend_only_on_their_seed():
    from selfplay.agents.alphastar.network import seeded_network
    from selfplay.agents.alphastar.sl import QUICK_NETWORK

    from selfplay.training.registry import make_env

    config = make_env("smac-commander:3m", 1, seed=0).network_config(**QUICK_NETWORK)
    a, b, c = seeded_network(config, 3), seeded_network(config, 3), seeded_network(config, 4)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), c.parameters()))


def test_resumed_runs_do_not_replay_their_first_games(env_seeds, tmp_path):
    """A resumed run (single learner, two-sided, league) rebuilds each player's environment from
    ``derive_seed(seed, ENV_RESUMED, player index, its updates)``: not the fresh start's seed, and another
    one after more updates. A resumed Ray league's workers draw and play from seeds of the generation
    it resumed from (the coordinator reports it), not the first run's."""
    from selfplay.training.distributed.league import LeagueCoordinator, RolloutWorker
    from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer
    from selfplay.training.loop import SelfPlayTrainer, TrainConfig
    from selfplay.training.two_sided import TwoSidedTrainer

    settings = {"horizon": 64, "minibatch_size": 16}
    makers = {"train": lambda d: SelfPlayTrainer(TrainConfig(seed=3, num_envs=4, agent_settings=settings), d),
              "two-sided": lambda d: TwoSidedTrainer(TrainConfig(env="smac:2m_vs_1z", seed=3, num_envs=2,
                                                                 agent_settings=settings), d),
              "league": lambda d: LeagueTrainer(LeagueTrainConfig(seed=3, num_envs=4, agent_settings=settings), d)}
    for kind, make in makers.items():
        first = make(tmp_path / kind)
        fresh = list(env_seeds)
        first.run.write_config(first.run_config)
        first.mode.start(first)
        for i, p in enumerate(first.players):
            p.updates = 5 + i  # as after some learner updates
        first.save()
        for updates in (0, 2):  # resumed at that commit, and at a later one
            env_seeds.clear()
            again = make(tmp_path / kind)
            env_seeds.clear()
            assert again.load()
            expected = [derive_seed(3, Stream.ENV_RESUMED, i, 5 + i + updates) for i in range(len(again.players))]
            assert env_seeds == expected, kind
            assert not set(expected) & set(fresh), kind
            for i, p in enumerate(again.players):
                assert p.updates == 5 + i + updates
                p.updates += 2
            again.save()
        env_seeds.clear()

    config = LeagueTrainConfig(seed=3, num_envs=4, agent_settings=settings)
    coordinator = LeagueCoordinator(config, str(tmp_path / "ray"))
    assert coordinator.resumed() == 0  # a fresh start: its first commit is generation 1
    coordinator.trainer.run.unlock()
    coordinator = LeagueCoordinator(config, str(tmp_path / "ray"))
    assert coordinator.resumed() == 1
    coordinator.trainer.run.unlock()
    env_seeds.clear()
    seen = {}
    for resumed_from in (0, 1, 4):
        worker = RolloutWorker(config, 0, coordinator=None, learners={}, resumed_from=resumed_from)
        worker.make_player("main_0", 0)
        seen[resumed_from] = (env_seeds.pop(), worker.rng.bit_generator.seed_seq.entropy)
    assert seen[0] == (derive_seed(3, Stream.ENV, 0, 1), derive_seed(3, Stream.SAMPLER, 1))
    assert seen[4] == (derive_seed(3, Stream.ENV_RESUMED, 0, 1, 4), derive_seed(3, Stream.SAMPLER, 1, 4))
    assert len({v for pair in seen.values() for v in pair}) == 6
