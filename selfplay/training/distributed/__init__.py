"""Scale-out on Ray (docs/guides/ray.md): Ray tasks for comparisons and evaluations (``executor``) and the
AlphaStar league as Ray actors (``league``). Nothing here imports Ray at module level: Ray is an
optional extra (``pip install -e .[ray]``) and is imported only when a ``--ray`` path runs."""
