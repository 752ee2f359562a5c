{% macro slice_bounds() -%}
    {#-
        This run's slices (int_balance_slices_invalidated), in two values:
        - new_events_after: the new_events slice's after_ingest_seq (int), none when no event is
          new;
        - replay_from: the earliest from_date of the replay slices (policy_change, segment_change,
          manual) as 'yyyy-mm-dd', none when there is none: the run replays nothing, and the
          merchants the slices invalidate (int_balance_merchants_invalidated) are none.
        Read with one query per dbt invocation: the first call keeps the answer in the Spark
        session's setting `payledger.slice_bounds` (keep_for_invocation); later calls read it back
        (kept_for_invocation: one `set` command, no query). The callers (the checkpoint, the view,
        the audit) are downstream of the slices, which a run builds once, before any of them.
        Returns nones while dbt parses (execute false) and where the slices table does not exist
        yet.
    -#}
    {#- The ref while dbt parses too: the callers depend on the slices. -#}
    {%- set slices_relation = ref('int_balance_slices_invalidated') -%}
    {%- set bounds = {'new_events_after': none, 'replay_from': none} -%}
    {%- if not execute -%}
        {{ return(bounds) }}
    {%- endif -%}
    {%- set kept = kept_for_invocation('payledger.slice_bounds') -%}
    {%- if kept is not none -%}
        {{ return(kept) }}
    {%- endif -%}
    {%- set slices = load_relation(slices_relation) -%}
    {%- if slices is none -%}
        {{ return(bounds) }}
    {%- endif -%}
    {%- set row = run_query(
        "select max(case when cause = 'new_events' then after_ingest_seq end),"
        ~ " cast(min(case when cause != 'new_events' then from_date end) as string)"
        ~ " from " ~ slices
    ).rows[0] -%}
    {%- do bounds.update({'new_events_after': none if row[0] is none else row[0] | int, 'replay_from': row[1]}) -%}
    {%- do keep_for_invocation('payledger.slice_bounds', bounds) -%}
    {{ return(bounds) }}
{%- endmacro %}
