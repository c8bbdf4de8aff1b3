{# The same Rego as trainjob-override-mutability; `source` (ExternalData) selects the provider branch. #}
{% include "trainjob_override_mutability/template.rego.j2" %}
