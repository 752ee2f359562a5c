{% macro run_watermarks() -%}
    {#-
        The stored state a build depends on, read once per dbt invocation: the watermark (max) of
        each growing column below, as it stood before this invocation wrote anything (the
        checkpoint's: where it exceeds the audit's, checkpoint_watermark_query). The first call
        reads every table that exists (an absent table has none; _read_watermarks) and keeps the
        answer in the Spark session's setting `payledger.run_watermarks` (keep_for_invocation);
        later calls in the same invocation read it back (kept_for_invocation: one `set` command, no
        catalog lookup, no query). One of another invocation is ignored and replaced.
        Why the kept answer serves every later caller, whichever node read first: a node uses only
        watermarks of tables that nothing this invocation wrote before it changed, namely its own
        table (read before it writes), the landed events (the loader's, not dbt's) and tables
        downstream of it (back-edges: the dedup index, the checkpoint, the audit), which dbt writes
        after it. With dbt's threads two nodes that do not depend on each other can both read
        first, at once: each uses its own read and the later is kept; neither writes a table the
        other's values come from. The one upstream value, the classification's watermark
        (checkpoint_watermark_query), can be kept after the classification's write only in a first
        build (its model then reads no watermark), where there is no checkpoint to ask about. A
        Thrift Server connection that is a session of its own reads the watermarks once more, and
        gets the same values.
        Returns {name: value}: integers for the ingest positions and the dedup directory's unit
        base, 'yyyy-mm-dd hh:mm:ss.ffffff' or none for `audit_policy_observed_at`; 0 (none for the
        timestamp) where the table is absent or empty. Names: see _watermark_columns. While dbt
        parses (execute false): an empty dict.
    -#}
    {%- if not execute -%}
        {#- Nothing is read while dbt parses (and _watermark_columns' source() would add a dependency). -#}
        {{ return({}) }}
    {%- endif -%}
    {%- set marks = {} -%}
    {%- for name, source in _watermark_columns().items() -%}
        {%- do marks.update({name: none if source[1].endswith('_at') else 0}) -%}
    {%- endfor -%}
    {%- set stored = kept_for_invocation('payledger.run_watermarks') -%}
    {%- if stored is none -%}
        {%- set stored = _read_watermarks() -%}
        {#- Kept as strings (the query's values may come back typed); an empty dict is kept too:
            a run that starts with no tables keeps that. -#}
        {%- set kept = {} -%}
        {%- for name, value in stored.items() -%}
            {%- do kept.update({name: none if value is none else value | string}) -%}
        {%- endfor -%}
        {%- do keep_for_invocation('payledger.run_watermarks', kept) -%}
    {%- endif -%}
    {%- for name, value in stored.items() if name in marks and value is not none -%}
        {%- do marks.update({name: value if _watermark_columns()[name][1].endswith('_at') else value | int}) -%}
    {%- endfor -%}
    {{ return(marks) }}
{%- endmacro %}


{#-
    Private. The watermarks run_watermarks keeps: {name: (relation, column)}. Downstream models'
    tables are back-edges for the models that read them: found with node_relation, not ref.
-#}
{% macro _watermark_columns() -%}
    {{ return({
        'landed_ingest_seq': (source('payledger', 'payment_events'), 'ingest_seq'),
        'classified_ingest_seq': (node_relation('int_payment_events_classified'), 'ingest_seq'),
        'rejected_ingest_seq': (node_relation('payment_event_rejects'), 'ingest_seq'),
        'checkpoint_source_watermark': (node_relation('int_merchant_daily_balances'), 'source_watermark'),
        'view_source_watermark': (node_relation('merchant_balance_current'), 'source_watermark'),
        'audit_events_watermark': (node_relation('balance_invalidations'), 'events_watermark'),
        'audit_policy_observed_at': (node_relation('balance_invalidations'), 'policy_observed_at'),
        'indexed_ingest_seq': (node_relation('int_payment_event_ids'), 'ingest_seq'),
        'dedup_directory_unit_base': (node_relation('int_payment_event_id_units'), 'unit_base'),
    }) }}
{%- endmacro %}


{#-
    Private. The tables that exist (dbt's relation cache says which): {name: string or none} for
    each watermark of those tables. Those among the stored maxima run_dbt read from the Delta
    tables' logs (_stored_maxima) are taken from there. The others, one query: one row, a column
    per watermark, each a scalar subquery that is a bare max() over one column: Delta answers such
    an aggregate from its log's file statistics when the table has no deletion vectors (its
    metadata-only rule matches an aggregate of max() alone; a name or a cast in the same select, as
    `union all` branches of named rows had, is merged into the aggregate and made every branch scan
    its table), still a plan and about four jobs a table. Casts and formats apply outside the
    subqueries. Then the checkpoint's, a second query (checkpoint_watermark_query): it reads the
    days of the events past the audit's watermark only, which it takes as a literal so that the
    scans prune files; not run when no classified event is past that watermark (the last build
    ended with its audit), where it could not raise balance_watermarks' events.
-#}
{% macro _read_watermarks() -%}
    {%- set columns = [] -%}
    {%- set relations = {} -%}
    {%- set stored = _stored_maxima() -%}
    {%- set read = {} -%}
    {%- for name, source in _watermark_columns().items() -%}
        {%- set relation = load_relation(source[0]) -%}
        {%- if relation is not none -%}
            {%- do relations.update({name: relation}) -%}
        {%- endif -%}
        {%- set key = _state_key(relation.schema, relation.identifier, source[1]) if relation is not none else none -%}
        {%- if key in stored and name != 'checkpoint_source_watermark' -%}
            {%- do read.update({name: none if stored[key] is none else stored[key] | string}) -%}
        {%- elif relation is not none and name != 'checkpoint_source_watermark' -%}
            {%- set maximum = "select max(" ~ source[1] ~ ") as value from " ~ relation -%}
            {%- set value = "date_format((" ~ maximum ~ "), 'yyyy-MM-dd HH:mm:ss.SSSSSS')" if source[1].endswith('_at')
                else "cast((" ~ maximum ~ ") as string)" -%}
            {%- do columns.append(value ~ " as " ~ name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if columns -%}
        {%- set found = run_query("select " ~ columns | join(", ")) -%}
        {%- for name in relations if name != 'checkpoint_source_watermark' and name not in read -%}
            {%- do read.update({name: found.columns[name].values()[0]}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set audited = read.get('audit_events_watermark') if read.get('audit_events_watermark') is not none else -1 -%}
    {%- set classified = read.get('classified_ingest_seq') -%}
    {%- if 'checkpoint_source_watermark' in relations and classified is not none and classified | int <= audited | int -%}
        {#- Every classified event is audited, so no checkpoint row exceeds the audit's watermark
            (a row's source_watermark is one of its day's classified events): the query's answer
            cannot raise balance_watermarks' events, and it is not run. -#}
        {%- do read.update({'checkpoint_source_watermark': none}) -%}
    {%- elif 'checkpoint_source_watermark' in relations -%}
        {%- set maximum = checkpoint_watermark_query(
            relations['checkpoint_source_watermark'],
            relations.get('classified_ingest_seq'),
            audited,
        ) -%}
        {%- do read.update({'checkpoint_source_watermark': run_query("select cast((" ~ maximum ~ ") as string)").rows[0][0]}) -%}
    {%- endif -%}
    {%- for name, value in read.items() if value == 'no bounds' -%}
        {%- set column = _watermark_columns()[name][1] -%}
        {%- do read.update({name: run_query("select cast(max(" ~ column ~ ") as string) from " ~ relations[name]).rows[0][0]}) -%}
    {%- endfor -%}
    {{ return(read) }}
{%- endmacro %}


{#-
    Private. The stored maxima run_dbt passes for this invocation in the environment variable
    PAYLEDGER_STORED_MAXIMA (payledger/stored_maxima.py): {"<schema>.<table>.<column>": whole
    number or none}, lower case; {} when it is unset (a `dbt` run by hand, the Thrift target,
    Iceberg). Read only while nodes run (run_watermarks returns before it while dbt parses), so that
    partial parsing does not see it change. Raises a compiler error when it is not such an object.
-#}
{% macro _stored_maxima() -%}
    {%- set given = env_var('PAYLEDGER_STORED_MAXIMA', '') -%}
    {%- if given == '' -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set stored = fromjson(given) -%}
    {%- set check = namespace(valid=stored is mapping) -%}
    {%- for key, value in (stored.items() if check.valid else []) -%}
        {%- if not (key is string and (value is none or (value is number and value is not boolean and value == value | int))) -%}
            {%- set check.valid = false -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not check.valid -%}
        {{ exceptions.raise_compiler_error("PAYLEDGER_STORED_MAXIMA must be a JSON object of whole numbers or nulls, got " ~ given[:500]) }}
    {%- endif -%}
    {{ return(stored) }}
{%- endmacro %}
