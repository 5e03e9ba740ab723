"""The lab's own upkeep: scaffold.py (`new-target`) and docs.py (README tables written from the
manifests and checked by the tests)."""
