{% macro keep_for_invocation(setting, value) -%}
    {#-
        Keep `value` (anything tojson writes) for the rest of this dbt invocation, in the Spark
        session's setting `setting`, as JSON with the invocation's id: kept_for_invocation reads it
        back with one `set` command (no catalog lookup, no query). A value another invocation kept
        there is replaced.
    -#}
    {%- do adapter.execute('set ' ~ setting ~ '=' ~ tojson({'invocation_id': invocation_id, 'value': value})) -%}
{%- endmacro %}


{% macro kept_for_invocation(setting) -%}
    {#- What keep_for_invocation kept in `setting` during this dbt invocation, or none: nothing is
        kept there, or another invocation kept it. -#}
    {%- set kept = session_setting(setting) -%}
    {%- if kept == '<undefined>' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set kept = fromjson(kept) -%}
    {{ return(kept['value'] if kept['invocation_id'] == invocation_id else none) }}
{%- endmacro %}
