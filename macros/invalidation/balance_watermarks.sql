{% macro balance_watermarks() -%}
    {#-
        The watermarks the balance models have consumed, read at execution time:
        - events: max source_watermark (ingest_seq) folded into int_merchant_daily_balances;
        - policy_observed_at: the latest snapshot observation already replayed, the greater of the
          daily checkpoint's and balance_invalidations' (the audit is written after the view, so a
          run killed before it simply replays the same slices again).
        Returns {'events': int, 'policy_observed_at': 'yyyy-mm-dd hh:mm:ss.ffffff' or none,
        'audited_policy_observed_at': the audit's alone (or none), 'has_checkpoint': bool}.
        Reads relations by name: they are downstream of their readers.
    -#}
    {%- set marks = {'events': 0, 'policy_observed_at': none, 'audited_policy_observed_at': none, 'has_checkpoint': false} -%}
    {%- if not execute -%}
        {{ return(marks) }}
    {%- endif -%}
    {%- set daily = adapter.get_relation(
        database=none, schema=generate_schema_name('intermediate', none) | trim, identifier='int_merchant_daily_balances'
    ) -%}
    {%- set audit = adapter.get_relation(
        database=none, schema=generate_schema_name(none, none) | trim, identifier='balance_invalidations'
    ) -%}
    {%- set parts = [] -%}
    {%- if daily is not none -%}
        {%- do marks.update({'has_checkpoint': true}) -%}
        {%- do parts.append("select max(source_watermark) as events, max(policy_observed_at) as observed, cast(null as timestamp) as audited from " ~ daily) -%}
    {%- endif -%}
    {%- if audit is not none -%}
        {%- do parts.append("select max(events_watermark) as events, max(policy_observed_at) as observed, max(policy_observed_at) as audited from " ~ audit) -%}
    {%- endif -%}
    {%- if parts -%}
        {%- set query -%}
            select
                coalesce(max(events), 0) as events,
                date_format(max(observed), 'yyyy-MM-dd HH:mm:ss.SSSSSS') as observed,
                date_format(max(audited), 'yyyy-MM-dd HH:mm:ss.SSSSSS') as audited
            from ({{ parts | join(' union all ') }})
        {%- endset -%}
        {%- set row = run_query(query).rows[0] -%}
        {%- do marks.update({'events': row[0] | int, 'policy_observed_at': row[1], 'audited_policy_observed_at': row[2]}) -%}
    {%- endif -%}
    {{ return(marks) }}
{%- endmacro %}
