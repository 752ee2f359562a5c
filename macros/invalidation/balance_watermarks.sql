{% macro balance_watermarks() -%}
    {#-
        The watermarks the balance models have consumed, read at execution time:
        - events: the events folded into int_merchant_daily_balances, the greater of its max
          source_watermark (ingest_seq, from file statistics: column_max_from_file_stats; a day's row
          is only ever replaced by one with an equal or greater source_watermark) and
          balance_invalidations' events_watermark;
        - audited_events: balance_invalidations' events_watermark alone (0 without an audit): the
          new_events slice starts there, so events folded by a run killed before its audit are
          audited by the next run;
        - policy_observed_at: the latest snapshot observation whose slices were replayed, from
          balance_invalidations alone. The audit is written after the view, so a run killed before
          it replays the same slices again (replay is idempotent), and the view, which keeps no
          policy watermark of its own, re-sums them.
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
    {%- set parts = [] -%}
    {%- if daily is not none -%}
        {%- do marks.update({'has_checkpoint': true}) -%}
        {%- do parts.append(
            "select " ~ column_max_from_file_stats(daily, 'source_watermark')
            ~ " as events, cast(null as bigint) as audited_events, cast(null as timestamp) as observed"
        ) -%}
    {%- endif -%}
    {%- if audit is not none -%}
        {%- do parts.append(
            "select max(events_watermark) as events, max(events_watermark) as audited_events,"
            ~ " max(policy_observed_at) as observed from " ~ audit
        ) -%}
    {%- endif -%}
    {%- if parts -%}
        {%- set query -%}
            select
                coalesce(max(events), 0) as events,
                coalesce(max(audited_events), 0) as audited_events,
                date_format(max(observed), 'yyyy-MM-dd HH:mm:ss.SSSSSS') as observed
            from ({{ parts | join(' union all ') }})
        {%- endset -%}
        {%- set row = run_query(query).rows[0] -%}
        {%- do marks.update({'events': row[0] | int, 'audited_events': row[1] | int, 'policy_observed_at': row[2]}) -%}
    {%- endif -%}
    {{ return(marks) }}
{%- endmacro %}
