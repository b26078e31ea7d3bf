"""The ⟨Ω, G⟩ core (docs/design/architecture.md, layer 2): menagerie, payoff table, schemes, league rules and the
policy/learner protocols. numpy only: a user can take a scheme without torch."""
