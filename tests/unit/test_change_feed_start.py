"""Where the view's fold of the checkpoint's change data feed starts, as dbt renders
``delta__change_feed_start`` (the macro file through Jinja, no Spark), from table states shaped as
``payledger.stored_maxima.delta_table_states`` gives them. That the fold then equals a re-sum
needs dbt and Spark: ``test_invalidation.py``."""

from __future__ import annotations

from types import SimpleNamespace

from tests.jinja_macros import environment, macro

CHECKPOINT = SimpleNamespace(schema="payledger_intermediate", identifier="int_merchant_daily_balances")
VIEW = SimpleNamespace(schema="payledger", identifier="merchant_balance_current")
AUDIT = SimpleNamespace(schema="payledger", identifier="balance_invalidations")


def change_feed_start(states: dict[str, dict], readers: list[SimpleNamespace]) -> int | None:
    """delta__change_feed_start(CHECKPOINT, readers), ``table_states()`` returning ``states`` and
    the project's own ``_state_key`` (``macros/state/table_states.sql``) naming the tables."""
    env = environment()
    env.globals["table_states"] = lambda: states
    env.globals["_state_key"] = macro(env, "state/table_states.sql", "_state_key")
    return macro(env, "formats/change_feed.sql", "delta__change_feed_start")(CHECKPOINT, readers)


def states(view_ms: int | None, audit_ms: int | None, feed: list[list[int]] | None) -> dict[str, dict]:
    """Table states of the checkpoint (its feed: ``[[version, committed_ms], ...]``, newest first),
    the view and the audit (their last data commits' times; None: no such table)."""
    found: dict[str, dict] = {"payledger_intermediate.int_merchant_daily_balances": {"data_version": 9, "data_committed_ms": 9000}}
    if feed is not None:
        found["payledger_intermediate.int_merchant_daily_balances"]["change_feed"] = feed
    for name, committed_ms in (("payledger.merchant_balance_current", view_ms), ("payledger.balance_invalidations", audit_ms)):
        if committed_ms is not None:
            found[name] = {"data_version": 3, "data_committed_ms": committed_ms}
    return found


#: Checkpoint commits 5 to 8, each of one build: 5 and 6 folded new events the view took in (it
#: committed at 1,100 and 1,700), 7 a manual replay's repair the view found nothing to merge for
#: (no view commit; the audit appended its slice at 2,700), 8 a build killed before its view.
FEED = [[8, 3000], [7, 2500], [6, 1500], [5, 900]]


def test_the_fold_starts_after_the_checkpoint_commit_the_audit_followed():
    # The view's last commit alone would start at 7 and add the repair a second time.
    assert change_feed_start(states(1700, 2700, FEED), [VIEW, AUDIT]) == 8
    assert change_feed_start(states(1700, 2700, FEED), [VIEW]) == 7


def test_the_newest_reader_counts_whichever_it_is():
    # A build whose view merged rows and whose audit ran after it: the view's commit is the later.
    assert change_feed_start(states(2800, 2700, FEED), [VIEW, AUDIT]) == 8
    # No audit yet (a first build stopped before it): the view's commit.
    assert change_feed_start(states(1700, None, FEED), [VIEW, AUDIT]) == 7
    # A build killed between the checkpoint and the view: both of its checkpoint commits are read.
    assert change_feed_start(states(1100, 1200, FEED), [VIEW, AUDIT]) == 6


def test_no_start_without_a_reader_commit_a_feed_or_a_listed_commit_before_the_readers():
    assert change_feed_start(states(None, None, FEED), [VIEW, AUDIT]) is None
    assert change_feed_start(states(1700, 2700, None), [VIEW, AUDIT]) is None
    # The readers last changed before every commit the feed reads whole (older ones were VACUUMed).
    assert change_feed_start(states(800, 850, FEED), [VIEW, AUDIT]) is None
    assert change_feed_start({}, [VIEW, AUDIT]) is None
