{% macro table_states() -%}
    {#-
        The table states run_dbt passes for this invocation (PAYLEDGER_TABLE_STATES,
        payledger/stored_maxima.py): {"<schema>.<table>": {"data_version": int, "data_committed_ms":
        int or none, "recorded_inputs": string or none, and for a table with a change data feed
        "change_feed": [[version, committed_ms], ...]}}, lower case; {} when it is unset (a `dbt`
        run by hand, the Thrift target, Iceberg). Read only while nodes run, so that partial parsing
        does not see it change.
    -#}
    {%- set given = env_var('PAYLEDGER_TABLE_STATES', '') -%}
    {%- set states = fromjson(given) if given else {} -%}
    {%- if states is not mapping -%}
        {{ exceptions.raise_compiler_error("PAYLEDGER_TABLE_STATES must be a JSON object, got " ~ given[:500]) }}
    {%- endif -%}
    {{ return(states) }}
{%- endmacro %}


{#-
    Private. The key of a table, or of one of its columns, in the stored state run_dbt passes
    (table_states, _stored_maxima; written by payledger/stored_maxima.py):
    "<schema>.<table>" or "<schema>.<table>.<column>", lower case.
-#}
{% macro _state_key(schema, identifier, column=none) -%}
    {{ return((schema ~ '.' ~ identifier ~ ('.' ~ column if column is not none else '')) | lower) }}
{%- endmacro %}
