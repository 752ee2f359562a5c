{% macro change_feed_start(source, readers) -%}
    {#-
        The first version of `source` whose changes the sums over it have not taken in, when the
        format's change data feed can give every change from there on: the version after the one
        `source` was at when the newest of `readers` last changed data. `readers` are the tables a
        build writes after `source` only once its sums took `source` in: the view, and the audit
        after it (a build whose view merged no row still appends to the audit). None otherwise
        (the caller then reads `source` whole).
    -#}
    {{- return(format_variant('change_feed_start')(source, readers)) -}}
{%- endmacro %}


{% macro delta__change_feed_start(source, readers) -%}
    {#-
        From the table states run_dbt passes (table_states()): the newest data commit of `readers`,
        and `source`'s commits after which its change data feed reads whole. Builds hold a lock,
        and a build writes `source` before `readers`: `source`'s newest commit made before that one
        is the version the sums reflect. None without table states (a `dbt` run by hand, the Thrift
        target), without a feed on `source`, or when no reader changed after the commits listed.
    -#}
    {%- set states = table_states() -%}
    {%- set source_state = states.get(_state_key(source.schema, source.identifier), {}) -%}
    {%- set written = [] -%}
    {%- for reader in readers -%}
        {%- set committed_ms = states.get(_state_key(reader.schema, reader.identifier), {}).get('data_committed_ms') -%}
        {%- if committed_ms is not none -%}
            {%- do written.append(committed_ms) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not written -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for version, committed_ms in source_state.get('change_feed', []) if committed_ms < written | max -%}
        {{ return(version + 1) }}
    {%- endfor -%}
    {{ return(none) }}
{%- endmacro %}


{% macro iceberg__change_feed_start(source, readers) -%}
    {#- None: no change data feed (iceberg__merge_on_read_tblproperties). -#}
    {{ return(none) }}
{%- endmacro %}


{% macro change_feed_relation(source, start) -%}
    {#-
        A relation of `source`'s changed rows from version `start` (change_feed_start) to the
        latest: the table's columns plus `_change_type` ('insert', 'update_preimage',
        'update_postimage' or 'delete'). Empty when `start` is past the latest version.
    -#}
    {{- return(format_variant('change_feed_relation')(source, start)) -}}
{%- endmacro %}


{% macro delta__change_feed_relation(source, start) -%}
    {#- Delta's table_changes; a start past the latest version reads nothing because the profile
        sets spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled. -#}
    {{- return("table_changes('" ~ source ~ "', " ~ start | int ~ ")") -}}
{%- endmacro %}


{% macro iceberg__change_feed_relation(source, start) -%}
    {{ exceptions.raise_compiler_error("change_feed_relation: Iceberg tables have no change data feed here (change_feed_start is none)") }}
{%- endmacro %}
