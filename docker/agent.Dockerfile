# An agent other than the article's, on top of the sandbox image: its pinned packages, installed offline from the
# wheels the bench downloaded on this host through its pip configuration (bench/containers/agent_image.py), into a
# folder of its own (the base has no pip: pip runs from its own wheel).
ARG BASE
FROM ${BASE}
ARG NAME
ARG REQUIREMENTS
USER root
COPY wheels /tmp/wheels
RUN set -eu; \
    pip_wheel="$(ls /tmp/wheels/pip-*.whl | head -n 1)"; \
    python3 "$pip_wheel/pip" install --quiet --no-index --find-links /tmp/wheels --no-cache-dir \
        --target "/opt/agents/$NAME" $REQUIREMENTS; \
    rm -rf /tmp/wheels
USER 10001
