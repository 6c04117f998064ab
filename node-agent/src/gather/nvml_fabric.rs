//! The NVML calls that `nvml-wrapper` (0.13) does not wrap: `nvmlDeviceGetGpuFabricInfo`, a GPU's
//! NVLink fabric registration (NVML API Reference Guide, `nvmlGpuFabricInfo_t`), and
//! `nvmlDeviceGetRemappedRows`, its row remapper's state. They go through the wrapper's own loaded
//! library (`Nvml::lib()`, the `nvml-wrapper-sys` bindings), so nothing else is loaded. This is the
//! only `unsafe` in the `launchguard` crate.
#![allow(unsafe_code)]

use launchguard_core::node::gpu::{FabricInfo, FabricState, RowRemap};
use nvml_wrapper::error::{nvml_try, NvmlError};
use nvml_wrapper::Device;
use nvml_wrapper_sys::bindings::{
    nvmlGpuFabricInfo_t, NVML_GPU_FABRIC_STATE_COMPLETED, NVML_GPU_FABRIC_STATE_IN_PROGRESS,
    NVML_GPU_FABRIC_STATE_NOT_STARTED, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED,
};

/// The fabric information of `dev`, read with `lib` (the library `dev` came from). `Err`: the
/// driver has no such call (older than R525) or NVML returned an error; the text says which.
pub fn fabric_info(nvml: &nvml_wrapper::Nvml, dev: &Device<'_>) -> Result<FabricInfo, String> {
    let lib = nvml.lib();
    if lib.nvmlDeviceGetGpuFabricInfo.is_err() {
        return Err("this NVML has no nvmlDeviceGetGpuFabricInfo (driver older than R525)".into());
    }
    let mut info = nvmlGpuFabricInfo_t {
        clusterUuid: [0; 16],
        status: 0,
        cliqueId: 0,
        state: 0,
    };
    // SAFETY: `dev.handle()` is a valid device handle of this same `nvml` instance, which is
    // initialised for as long as `dev` borrows it; `info` is a live, properly aligned
    // `nvmlGpuFabricInfo_t` that NVML fills in (the call writes only into it); the symbol was found
    // (checked above), so the bindings' wrapper does not panic.
    let rc = unsafe { lib.nvmlDeviceGetGpuFabricInfo(dev.handle(), &mut info) };
    nvml_try(rc).map_err(|e: NvmlError| e.to_string())?;
    let state = match u32::from(info.state) {
        NVML_GPU_FABRIC_STATE_NOT_SUPPORTED => FabricState::NotSupported,
        NVML_GPU_FABRIC_STATE_NOT_STARTED => FabricState::NotStarted,
        NVML_GPU_FABRIC_STATE_IN_PROGRESS => FabricState::InProgress,
        NVML_GPU_FABRIC_STATE_COMPLETED => FabricState::Completed,
        other => return Err(format!("unknown fabric state {other}")),
    };
    let status =
        (state == FabricState::Completed).then(|| nvml_try(info.status).map_err(|e| e.to_string()));
    Ok(FabricInfo {
        state,
        status,
        cluster_uuid: info
            .clusterUuid
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        clique_id: info.cliqueId,
    })
}

/// The row remapper's state of `dev` (`nvmlDeviceGetRemappedRows`, A100 and later). `Err`: the
/// symbol is missing or NVML returned an error (`Not Supported` before A100); the text says which.
pub fn remapped_rows(nvml: &nvml_wrapper::Nvml, dev: &Device<'_>) -> Result<RowRemap, String> {
    let lib = nvml.lib();
    let Ok(call) = lib.nvmlDeviceGetRemappedRows.as_ref() else {
        return Err("this NVML has no nvmlDeviceGetRemappedRows".into());
    };
    let (mut corr, mut unc, mut pending, mut failed) = (0, 0, 0, 0);
    // SAFETY: as in `fabric_info`: a valid handle of this `nvml`, and four live `c_uint`s that NVML
    // writes its answers into; the symbol was resolved (checked above).
    let rc = unsafe { call(dev.handle(), &mut corr, &mut unc, &mut pending, &mut failed) };
    nvml_try(rc).map_err(|e: NvmlError| e.to_string())?;
    Ok(RowRemap {
        correctable: corr,
        uncorrectable: unc,
        pending: pending != 0,
        failed: failed != 0,
    })
}
