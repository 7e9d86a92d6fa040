from agentnb.cli import main

raise SystemExit(main())
