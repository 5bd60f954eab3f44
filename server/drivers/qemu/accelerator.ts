import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';

export type Accelerator = 'kvm' | 'tcg';

/**
 * KVM where it works, else TCG. `/dev/kvm` alone is not enough: a host can offer it from a
 * paravirtual KVM module on a CPU without hardware virtualisation, where a guest either aborts
 * (`-cpu host`: "failed to set MSR 0x10a") or boots for minutes. So KVM needs both the device and
 * the CPU's vmx (Intel) or svm (AMD) flag; QEMU_ACCEL=kvm or tcg decides instead.
 */
export async function chooseAccelerator(setting: 'auto' | Accelerator): Promise<{ accelerator: Accelerator; reason: string }> {
  if (setting !== 'auto') return { accelerator: setting, reason: `QEMU_ACCEL=${setting}` };
  try {
    await access('/dev/kvm', constants.R_OK | constants.W_OK);
  } catch {
    return { accelerator: 'tcg', reason: '/dev/kvm cannot be opened' };
  }
  let cpuinfo: string;
  try {
    cpuinfo = await readFile('/proc/cpuinfo', 'utf8');
  } catch {
    return { accelerator: 'tcg', reason: 'the CPU flags cannot be read' };
  }
  if (!/^flags\s*:.*\b(vmx|svm)\b/m.test(cpuinfo)) {
    return { accelerator: 'tcg', reason: '/dev/kvm exists but the CPU offers no hardware virtualisation (no vmx or svm flag)' };
  }
  return { accelerator: 'kvm', reason: '/dev/kvm opens and the CPU offers hardware virtualisation' };
}
