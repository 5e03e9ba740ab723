"""`lab reproduce [POST]`: a published post's experiment, which is bench-all of the post's
matrix (lab/report/posts.py reads the posts and their claims)."""

from __future__ import annotations

import argparse

from lab.arguments import add_command
from lab.matrix import load_matrix
from lab.report import posts
from lab.run import bench


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Re-create a widely read post's experiment with the lab's endpoints and print, per
    published figure, what the post published, what this machine measures and what the
    capacity model predicts. The same as bench-all --matrix POST."""
    if args.post is None:
        print("posts the lab re-creates (just reproduce POST):")
        for name in posts.posts():
            matrix = load_matrix(name)
            post = posts.post_of(matrix)
            claims = len(posts.claims_of(matrix))
            print(f"  {name:<14} {post.citation}: {len(matrix.cells)} cells, {claims} figures")
        return 0
    matrix = posts.load_post(args.post)
    posts.claims_of(matrix)  # a broken post file: one line before anything starts
    # run.json records the bench-all it is, so an interrupted reproduction resumes as one
    argv = ["bench-all", "--matrix", args.post, *bench.run_flags(args)]
    return bench.run(bench.bench_all_arguments(argv[1:]), all_targets=True, argv=argv)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "reproduce",
        cmd_reproduce,
        "re-run a published post's experiment (no name: list the posts)",
    )
    p.add_argument("post", nargs="?", help="the post's name; omit it to list them")
    bench.run_arguments(p)
