resource "helm_release" "ingress_nginx" {
  count            = var.ingress_enabled ? 1 : 0
  name             = "ingress-nginx"
  repository       = "https://kubernetes.github.io/ingress-nginx"
  chart            = "ingress-nginx"
  version          = "4.11.3"
  namespace        = "ingress-nginx"
  create_namespace = true
  atomic           = true

  set {
    name  = "controller.replicaCount"
    value = var.ingress_replicas
  }
  # An NLB in front of the controller (the Service of type LoadBalancer).
  set {
    name  = "controller.service.annotations.service\\.beta\\.kubernetes\\.io/aws-load-balancer-type"
    value = "nlb"
  }
}

resource "helm_release" "cert_manager" {
  count            = var.cert_manager_enabled ? 1 : 0
  name             = "cert-manager"
  repository       = "https://charts.jetstack.io"
  chart            = "cert-manager"
  version          = "v1.16.1"
  namespace        = "cert-manager"
  create_namespace = true
  atomic           = true

  set {
    name  = "crds.enabled"
    value = "true"
  }
}

# cert-manager's chart creates no issuer. The generic "raw" chart applies the ClusterIssuer manifest through
# helm, so this module needs no kubernetes provider (whose CRD-typed resources cannot even be planned
# before cert-manager's CRDs exist).
resource "helm_release" "letsencrypt_issuer" {
  count      = var.cert_manager_enabled && var.letsencrypt_email != "" ? 1 : 0
  name       = "letsencrypt-issuer"
  repository = "https://bedag.github.io/helm-charts"
  chart      = "raw"
  version    = "2.0.0"
  namespace  = "cert-manager"

  values = [yamlencode({
    resources = [{
      apiVersion = "cert-manager.io/v1"
      kind       = "ClusterIssuer"
      metadata   = { name = "letsencrypt" }
      spec = {
        acme = {
          email               = var.letsencrypt_email
          server              = "https://acme-v02.api.letsencrypt.org/directory"
          privateKeySecretRef = { name = "letsencrypt-account" }
          solvers             = [{ http01 = { ingress = { ingressClassName = "nginx" } } }]
        }
      }
    }]
  })]

  depends_on = [helm_release.cert_manager]
}

resource "helm_release" "monitoring" {
  count            = var.monitoring_enabled ? 1 : 0
  name             = "kube-prometheus-stack"
  repository       = "https://prometheus-community.github.io/helm-charts"
  chart            = "kube-prometheus-stack"
  version          = "65.5.0"
  namespace        = "monitoring"
  create_namespace = true
  atomic           = true
  timeout          = 900

  values = [yamlencode({
    prometheus = {
      prometheusSpec = {
        retention = "${var.monitoring_retention_days}d"
        storageSpec = {
          volumeClaimTemplate = {
            spec = {
              accessModes = ["ReadWriteOnce"]
              resources   = { requests = { storage = "${var.monitoring_storage_gb}Gi" } }
            }
          }
        }
      }
    }
  })]

  set_sensitive {
    name  = "grafana.adminPassword"
    value = var.grafana_admin_password
  }
}
