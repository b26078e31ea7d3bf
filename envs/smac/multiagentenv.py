"""``MultiAgentEnv``: the base class of SMAC's ``smac.env`` (and of PyMARL's environments).

Its methods are the episode protocol every SMAC client (PyMARL, EPyMARL, …) relies on; each one
raises ``NotImplementedError`` until a subclass provides it, except ``get_env_info``, which SMAC
defines here from the size getters::

    {"state_shape": get_state_size(), "obs_shape": get_obs_size(), "n_actions": get_total_actions(),
     "n_agents": n_agents, "episode_limit": episode_limit}

``envs.smac.SMACEnv`` (exported as ``StarCraft2Env``) derives from it, so code that checks
``isinstance(env, MultiAgentEnv)`` or subclasses it for a wrapper behaves as with SMAC.
"""

from __future__ import annotations


class MultiAgentEnv:
    """SMAC's multi-agent environment protocol (module docstring)."""

    n_agents: int
    episode_limit: int

    def step(self, actions):
        """Apply one action per agent; returns ``(reward, terminated, info)``."""
        raise NotImplementedError

    def get_obs(self):
        """All agents' observations, a list."""
        raise NotImplementedError

    def get_obs_agent(self, agent_id):
        """The observation of ``agent_id``."""
        raise NotImplementedError

    def get_obs_size(self):
        """The size of one agent's observation."""
        raise NotImplementedError

    def get_state(self):
        """The global state."""
        raise NotImplementedError

    def get_state_size(self):
        """The size of the global state."""
        raise NotImplementedError

    def get_avail_actions(self):
        """All agents' available actions, a list of 0/1 lists."""
        raise NotImplementedError

    def get_avail_agent_actions(self, agent_id):
        """The available actions of ``agent_id``."""
        raise NotImplementedError

    def get_total_actions(self):
        """The number of actions an agent could ever take."""
        raise NotImplementedError

    def reset(self):
        """Start an episode; returns the initial observations and state."""
        raise NotImplementedError

    def render(self):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError

    def seed(self):
        raise NotImplementedError

    def save_replay(self):
        """Save a replay."""
        raise NotImplementedError

    def get_env_info(self) -> dict:
        return {
            "state_shape": self.get_state_size(),
            "obs_shape": self.get_obs_size(),
            "n_actions": self.get_total_actions(),
            "n_agents": self.n_agents,
            "episode_limit": self.episode_limit,
        }
