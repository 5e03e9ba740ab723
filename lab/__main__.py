from lab.cli import main

raise SystemExit(main())
