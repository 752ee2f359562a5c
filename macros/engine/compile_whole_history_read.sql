{% macro compile_whole_history_read(reads_whole_history) -%}
    {#-
        Call in a model's body, at compile time, with whether this run of the model reads whole
        histories. When it does and the run allows it, the model's own statements run with Spark's
        default code generation, and the model's post-hook gives the session its values back
        (restore_code_generation). The run allows it when the session setting
        `payledger.codegen.whole_history_reads` holds those settings as JSON: dbt run through
        payledger on a target that interprets, with PAYLEDGER_CODEGEN unset
        (payledger.dbt.code_generation_settings). Nothing is set otherwise: a bare `dbt`, a target
        that compiles already, PAYLEDGER_CODEGEN set, a run that reads a batch only.
        The session's values of the settings that differ are kept as JSON in
        `payledger.codegen.saved`, and only those are set.
    -#}
    {%- if execute and reads_whole_history -%}
        {%- set allowed = session_setting('payledger.codegen.whole_history_reads') -%}
        {%- if allowed != '<undefined>' -%}
            {%- set wanted = fromjson(allowed) -%}
            {#- Only the settings that differ are kept and set: one left at Spark's default stays unset. -#}
            {%- set saved = {} -%}
            {%- for key, value in wanted.items() -%}
                {%- set current = session_setting(key) -%}
                {%- if current != value -%}
                    {%- do saved.update({key: current}) -%}
                {%- endif -%}
            {%- endfor -%}
            {%- if saved -%}
                {%- do adapter.execute('set payledger.codegen.saved=' ~ tojson(saved)) -%}
                {%- for key in saved -%}
                    {%- do adapter.execute('set ' ~ key ~ '=' ~ wanted[key]) -%}
                {%- endfor -%}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
