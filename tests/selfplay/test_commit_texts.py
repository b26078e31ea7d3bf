"""A commit encodes and writes only what changed (training.commit_texts), yet every file it leaves is
byte for byte the full rewrite's: the state file of every commit, the indexes and the tables."""

from __future__ import annotations

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.training import statefile
from selfplay.training.commit_texts import CommitTexts
from selfplay.training.loop import SelfPlayTrainer, TrainConfig
from selfplay.training.rundir import RunDir
from selfplay.training.trainer import MATCH_COLUMNS
from selfplay.utils.io import json_text


def test_every_commit_and_every_export_equals_the_full_rewrite(tmp_path):
    config = TrainConfig(scheme="delta-uniform:delta=0", episodes=160, num_envs=16, checkpoints=4, seed=3,
                         agent_settings={"horizon": 64, "epochs": 1}, tensorboard=False)
    trainer = SelfPlayTrainer(config, tmp_path / "run")
    commits = []
    commit = trainer.run.commit

    def checked(state, files):  # the spliced texts against encoding the plain state_dict() whole
        commits.append(statefile.encode(state) == statefile.encode(trainer.state_dict()))
        return commit(state, files)

    trainer.run.commit = checked
    trainer.train()
    assert len(commits) >= 5 and all(commits)
    assert len(trainer.menagerie) > 100  # δ=0-Uniform: an entry per game, so the cached rows were reused
    full = tmp_path / "full"
    full.mkdir()
    run = RunDir(full)
    for folder, menagerie in trainer.mode.menageries().items():
        menagerie.save(full / folder)
        assert (full / folder / "index.json").read_bytes() == (trainer.run.root / folder / "index.json").read_bytes()
    run.write_rows(full / "matches.csv", MATCH_COLUMNS, trainer.matches)
    columns = list(dict.fromkeys(k for row in trainer.metrics for k in row))
    run.write_rows(full / "metrics.csv", columns, ([row.get(c, "") for c in columns] for row in trainer.metrics))
    for name in ("matches.csv", "metrics.csv"):
        assert (full / name).read_bytes() == (trainer.run.root / name).read_bytes()
    assert len(trainer.matches) == 160 and (full / "matches.csv").read_text().count("\n") == 161


def test_changed_rows_are_encoded_again(tmp_path):
    # a pair that plays again, an entry whose file is set, rows with other data than plain values
    texts, payoff, menagerie = CommitTexts(), Payoff(decay=0.5), Menagerie()
    menagerie.add("p0", step=0, player="learner")
    payoff.update("learner", 0, 1.0)

    def state():
        return {"payoff": {**payoff.to_dict(), "pairs": texts.pairs(payoff.to_dict()["pairs"])},
                "index": texts.index(menagerie.index())}

    def plain():
        return {"payoff": payoff.to_dict(), "index": menagerie.index()}

    assert statefile.encode(state()) == statefile.encode(plain())
    payoff.update("learner", 0, 0.5)
    payoff.update("learner", 7, 0.0)
    menagerie[0].file = "policy_000000.pt"
    menagerie.add("p1", step=3, player="learner")
    assert statefile.encode(state()) == statefile.encode(plain())
    texts.write_index(menagerie, tmp_path)
    assert (tmp_path / "index.json").read_text() == json_text(menagerie.index()) + "\n"
    menagerie.add("p2", step=4, weight=np.int64(2))  # a numpy tag: the state encodes it as the full path does
    assert statefile.encode(state()) == statefile.encode(plain())
    rows = [("a", 1, 0.5)]
    assert statefile.encode({"m": texts.rows(rows)}) == statefile.encode({"m": rows})
    rows.append(("b", np.float32(2.0), 1.0))  # not plain: the list goes to the full encoding as it is
    assert texts.rows(rows) is rows


def test_a_table_changed_on_disk_is_rewritten_whole(tmp_path):
    texts, path = CommitTexts(), tmp_path / "t.csv"
    texts.write_table(path, ["a", "b"], [[1, 2]])
    texts.write_table(path, ["a", "b"], [[1, 2], [3, 4]])
    assert path.read_bytes().decode() == "a,b\r\n1,2\r\n3,4\r\n"
    path.write_text("a,b\r\n")  # cut by someone else: not appended to
    texts.write_table(path, ["a", "b"], [[1, 2], [3, 4], [5, 6]])
    assert path.read_bytes().decode() == "a,b\r\n1,2\r\n3,4\r\n5,6\r\n"
    texts.write_table(path, ["a", "b", "c"], [[1, 2, ""], [3, 4, ""], [5, 6, 7]])  # a new column: rewritten
    assert path.read_bytes().decode() == "a,b,c\r\n1,2,\r\n3,4,\r\n5,6,7\r\n"
