"""Training (docs/design/architecture.md, layer 4): the environment/agent registry, batched games between
policies with per-game opponents, match play, run directories, the trainer core and its modes
(one learner, one learner per side, a league), and the adapters to other trainers."""
