"""The real control plane: Kubernetes' own etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kubectl, built from their Go modules (`toolchain`) and run on loopback with the
local cluster's kubelets as nodes (`cluster`). Where the tests, the benchmarks and the demo prove
on Kubernetes itself what the stand-in (`localcluster/`) only suggests."""
