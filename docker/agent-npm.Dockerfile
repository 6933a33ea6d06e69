# An agent from npm, on top of the sandbox image: the node_modules tree the bench installed on this host through its
# npm configuration (bench/agents/install.py), with this host's node in bin/, in /opt/agents/<name>
# (bench/containers/agent_image.py). The build fails here, with node's own error, where that node cannot run.
ARG BASE
FROM ${BASE}
ARG NAME
USER root
COPY packages /opt/agents/${NAME}
RUN if [ -e "/opt/agents/$NAME/bin/node" ] || [ -L "/opt/agents/$NAME/bin/node" ]; then "/opt/agents/$NAME/bin/node" --version; fi
USER 10001
