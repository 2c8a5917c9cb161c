mod against_kubefake;
mod control_plane;
mod decisions;
mod dockerfile;
mod manifests;
