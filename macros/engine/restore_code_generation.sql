{% macro restore_code_generation() -%}
    {#-
        The post-hook of a model that calls compile_whole_history_read: gives the session back the
        settings that call kept (`payledger.codegen.saved`, JSON) and forgets them, so the nodes
        after the model run as the target sets them. Reads one setting when nothing was kept.
        Renders no SQL (dbt skips an empty hook). After a model that failed, the session keeps
        Spark's defaults until the invocation ends; run_dbt applies the profile's settings again at
        the next one.
    -#}
    {%- if execute -%}
        {%- set saved = session_setting('payledger.codegen.saved') -%}
        {%- if saved != '<undefined>' -%}
            {%- for key, value in fromjson(saved).items() -%}
                {%- do adapter.execute('set ' ~ key ~ '=' ~ value) -%}
            {%- endfor -%}
            {%- do adapter.execute('reset payledger.codegen.saved') -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
