"""Pod Security's "restricted" level, as the Kubernetes Pod Security Standards document it (v1.33: every control of
the baseline level, and the restricted level's own), checked on a pod's metadata and spec as an admission controller
in a namespace labelled `pod-security.kubernetes.io/enforce: restricted` checks them. No cluster is needed.

`violations(pod)` lists what a pod breaks, one line a field: [] is a pod the namespace admits.
"""

from __future__ import annotations

from typing import Any

# The one capability a container may add (baseline allows more; restricted this one alone, with ALL dropped).
RESTRICTED_CAPABILITIES = {"NET_BIND_SERVICE"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start"}
SAFE_SYSCTLS |= {"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports"}
SAFE_SYSCTLS |= {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl"}
SAFE_SYSCTLS |= {"net.ipv4.tcp_keepalive_probes"}
VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
SECCOMP = {"RuntimeDefault", "Localhost"}
APPARMOR = {"RuntimeDefault", "Localhost"}
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec.get("containers", []), *spec.get("ephemeralContainers", [])]


def own(container: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = container.get("securityContext") or {}
    return found


def violations(pod: dict[str, Any]) -> list[str]:
    """What `pod` (a pod, or a Job's pod template: `metadata` and `spec`) breaks of the restricted level."""
    spec, annotations = pod["spec"], pod.get("metadata", {}).get("annotations") or {}
    found = pod_level(spec)
    for name, profile in annotations.items():
        if (
            name.startswith(APPARMOR_ANNOTATION)
            and profile != "runtime/default"
            and not profile.startswith("localhost/")
        ):
            found.append(f"annotation {name}: {profile}")
    for container in containers(spec):
        found += [f"{container['name']}: {what}" for what in container_level(container)]
    return found


def pod_level(spec: dict[str, Any]) -> list[str]:
    found = [host for host in ("hostNetwork", "hostPID", "hostIPC") if spec.get(host)]
    security = spec.get("securityContext") or {}
    found += shared_fields(security)
    # set true on the pod, or on every container (a false one is named by shared_fields)
    if security.get("runAsNonRoot") is None and any(own(c).get("runAsNonRoot") is None for c in containers(spec)):
        found.append("runAsNonRoot unset")
    # likewise: a profile on the pod, or on every container
    if security.get("seccompProfile") is None and any(own(c).get("seccompProfile") is None for c in containers(spec)):
        found.append("seccompProfile unset")
    found += [f"sysctl {s['name']}" for s in security.get("sysctls") or [] if s["name"] not in SAFE_SYSCTLS]
    for volume in spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= VOLUMES:
            found.append(f"volume {volume['name']}: {', '.join(sorted(kinds - VOLUMES))}")
    return found


def shared_fields(security: dict[str, Any]) -> list[str]:
    """The fields a pod's and a container's securityContext both have, where either may break the level."""
    found = []
    if (security.get("windowsOptions") or {}).get("hostProcess"):
        found.append("windowsOptions.hostProcess")
    if security.get("runAsNonRoot") is False:
        found.append("runAsNonRoot false")
    if security.get("runAsUser") == 0:
        found.append("runAsUser 0")
    if "seccompProfile" in security and (security["seccompProfile"] or {}).get("type") not in SECCOMP:
        found.append(f"seccompProfile {(security['seccompProfile'] or {}).get('type')}")
    if "appArmorProfile" in security and (security["appArmorProfile"] or {}).get("type") not in APPARMOR:
        found.append(f"appArmorProfile {(security['appArmorProfile'] or {}).get('type')}")
    selinux = security.get("seLinuxOptions") or {}
    if selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
        found.append("seLinuxOptions")
    return found


def container_level(container: dict[str, Any]) -> list[str]:
    security = own(container)
    found = shared_fields(security)
    if security.get("privileged"):
        found.append("privileged")
    if security.get("allowPrivilegeEscalation") is not False:
        found.append("allowPrivilegeEscalation")
    capabilities = security.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        found.append("capabilities: ALL not dropped")
    if added := set(capabilities.get("add") or []) - RESTRICTED_CAPABILITIES:
        found.append(f"capabilities added: {', '.join(sorted(added))}")
    if security.get("procMount", "Default") != "Default":
        found.append(f"procMount {security['procMount']}")
    found += [f"hostPort {port['hostPort']}" for port in container.get("ports", []) if port.get("hostPort")]
    return found
