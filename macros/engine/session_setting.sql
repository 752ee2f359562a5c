{% macro session_setting(key) -%}
    {#- The Spark session's value of the setting `key` (Spark's `set <key>`), a string: the value set,
        else Spark's default for a setting Spark defines, else '<undefined>'. -#}
    {{ return(run_query('set ' ~ key).rows[0][1]) }}
{%- endmacro %}
