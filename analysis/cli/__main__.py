"""``python -m analysis.cli`` (same as ``python -m analysis`` and ``attnrank``)."""

from analysis.cli import main

raise SystemExit(main())
