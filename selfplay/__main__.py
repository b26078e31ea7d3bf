from selfplay.cli import main

raise SystemExit(main())
