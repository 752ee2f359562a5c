{% macro balance_watermarks() -%}
    {#-
        The watermarks the balance models have consumed, from the run's stored state (run_watermarks:
        read once per invocation, before anything is written):
        - events: the events folded into int_merchant_daily_balances, the greater of its max
          source_watermark (ingest_seq; checkpoint_watermark_query: where it can exceed the
          audit's, on the days of the events past it; a day's row is only ever replaced by one
          with an equal or greater source_watermark) and balance_invalidations' events_watermark;
        - audited_events: balance_invalidations' events_watermark alone (0 without an audit): the
          new_events slice starts there, so events folded by a run killed before its audit are
          audited by the next run;
        - policy_observed_at: the latest snapshot observation whose slices were replayed, from
          balance_invalidations alone. The audit is written after the view, so a run killed before
          it replays the same slices again (replay is idempotent), and the view, which keeps no
          policy watermark of its own, takes them in again (folding the checkpoint's changes since
          its last write, or re-summing).
        Returns {'events': int, 'audited_events': int, 'policy_observed_at': 'yyyy-mm-dd
        hh:mm:ss.ffffff' or none, 'has_checkpoint': bool}. Both relations are downstream of the
        models that call this (back-edges): they are found with node_relation, not ref.
    -#}
    {%- set marks = {'events': 0, 'audited_events': 0, 'policy_observed_at': none, 'has_checkpoint': false} -%}
    {%- if not execute -%}
        {{ return(marks) }}
    {%- endif -%}
    {%- set daily = load_relation(node_relation('int_merchant_daily_balances')) -%}
    {%- set audit = load_relation(node_relation('balance_invalidations')) -%}
    {%- if daily is not none and audit is none -%}
        {#- Only a first build stopped between the checkpoint and the audit leaves this state: with no
            audited watermark, every observed version and every folded event is replayed and audited
            again (replay is idempotent). -#}
        {{ log(
            "balance_watermarks: " ~ daily ~ " exists but " ~ node_relation('balance_invalidations')
            ~ " does not (a first build stopped before its audit): replaying every observed version",
            info=true
        ) }}
    {%- endif -%}
    {%- set run = run_watermarks() -%}
    {%- do marks.update({
        'events': [run.checkpoint_source_watermark, run.audit_events_watermark] | max,
        'audited_events': run.audit_events_watermark,
        'policy_observed_at': run.audit_policy_observed_at,
        'has_checkpoint': daily is not none,
    }) -%}
    {{ return(marks) }}
{%- endmacro %}
